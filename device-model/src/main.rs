//! `mana-device`: serve one emulated MANA VF on a vfio-user unix socket.

fn main() {
    eprintln!("mana-device: not implemented yet");
    std::process::exit(2);
}
