fn main() {
    std::process::exit(linggen::cli::main());
}
