// Inert fixture: the audit only reads this file.
use std::env;
use std::fs;

fn main() {
    let home = env::var("HOME").unwrap_or_default();
    let _ = fs::read_dir(format!("{}/.ssh", home));
    let _ = fs::read_to_string(format!("{}/{}", home, ".aws/credentials"));
}
