//! Redirects, followed here rather than inside reqwest so that every response
//! of a chain can be shown (`-i`, `-D`, as `curl -iL` shows them). Each hop's
//! method, body and headers follow curl's rules: 303 (and a POST's 301/302)
//! becomes a body-less GET, and credentials never go to another origin.

use reqwest::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HeaderMap, LOCATION, PROXY_AUTHORIZATION,
};
use reqwest::{Method, Response, Url};

use super::errors::TooManyRedirects;
use crate::config::http::{Payload, Request};
use crate::domain::Protocols;

/// Redirect statuses that carry a Location to follow (RFC 9110 §15.4).
const FOLLOWED: [u16; 5] = [301, 302, 303, 307, 308];

/// One request of a redirect chain.
#[derive(Clone)]
pub struct Hop {
    pub url: Url,
    pub method: Method,
    pub body: Option<Payload>,
    pub headers: HeaderMap,
    /// Redirects followed before this hop.
    pub followed: u32,
}

pub enum Follow {
    /// The response is the answer.
    Stay,
    Go(Box<Hop>),
    TooMany(String),
    BadLocation(String),
    /// The redirect goes to a protocol outside `--proto`/`--proto-redir` (curl's 1).
    Refused(String),
}

impl Hop {
    pub fn first(spec: &Request, url: Url) -> Hop {
        Hop {
            url,
            method: spec.method.clone(),
            body: spec.body.clone(),
            headers: spec.headers.clone(),
            followed: 0,
        }
    }

    /// What to do after `response`, with at most `max` redirects (0: none), to
    /// the `protocols` redirects may use.
    pub fn next(&self, response: &Response, max: u32, protocols: Protocols) -> Follow {
        let status = response.status().as_u16();
        let location = response.headers().get(LOCATION);
        let (true, Some(location), true) = (FOLLOWED.contains(&status), location, max > 0) else {
            return Follow::Stay;
        };
        if self.followed >= max {
            return Follow::TooMany(TooManyRedirects { max }.to_string());
        }
        let text = String::from_utf8_lossy(location.as_bytes());
        let Ok(url) = self.url.join(text.trim()) else {
            return Follow::BadLocation(format!("cannot follow the redirect to '{text}'"));
        };
        if !protocols.allows(url.scheme()) {
            return Follow::Refused(format!(
                "the redirect to '{text}' uses {}, and redirects may use {} (--proto, --proto-redir)",
                url.scheme(),
                protocols.describe()
            ));
        }
        let mut next = Hop {
            url,
            followed: self.followed + 1,
            ..self.clone()
        };
        let to_get = status == 303 && self.method != Method::HEAD
            || matches!(status, 301 | 302) && self.method == Method::POST;
        if to_get {
            next.method = Method::GET;
            next.body = None;
            next.headers.remove(CONTENT_TYPE);
            next.headers.remove(CONTENT_LENGTH);
        }
        if next.url.origin() != self.url.origin() {
            for name in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
                next.headers.remove(name);
            }
        }
        Follow::Go(Box::new(next))
    }
}
