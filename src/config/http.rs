//! HTTP mode's settings.

use crate::cli::Cli;

#[derive(Clone)]
pub struct HttpConfig {
    pub url: String,
    pub(crate) cli: Box<Cli>,
}

impl HttpConfig {
    pub fn from_cli(cli: Cli, url: String) -> anyhow::Result<HttpConfig> {
        Ok(HttpConfig {
            url,
            cli: Box::new(cli),
        })
    }
}
