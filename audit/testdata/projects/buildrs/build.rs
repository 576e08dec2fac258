// Inert fixture: the audit only reads this file.
use std::net::TcpStream;
use std::process::Command;

fn main() {
    // std::fs::read_dir in a comment does not count
    let _ = Command::new("sh").arg("-c").arg("uname -a").output();
    let _ = TcpStream::connect("192.0.2.10:4444");
}
