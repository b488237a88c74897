use std::process::ExitCode;

fn main() -> ExitCode {
    let status = retry::run(std::env::args_os());
    ExitCode::from(u8::try_from(status).unwrap_or(retry::USAGE_EXIT))
}
