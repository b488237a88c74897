//! `-C -` with `-o`: a body cut off mid-way stays in the temporary file beside
//! the target, and the next attempt asks for the rest (`Range: bytes=N-` with
//! `If-Range` carrying the first response's strong ETag or its Last-Modified).
//! A 206 whose Content-Range starts at N is appended; any other success starts
//! the body again from zero. Without a validator nothing is resumed: the rest
//! of a changed file must never be glued to the start of the old one.

use std::cell::RefCell;
use std::io::{self, Write};

use reqwest::Response;
use reqwest::header::{CONTENT_RANGE, ETAG, HeaderValue, LAST_MODIFIED};

use super::output::{Body, Destination};
use crate::report::{self, Replacement};

struct Partial {
    file: Replacement,
    len: u64,
    /// What If-Range carries; `None` when the response gave nothing to check with.
    validator: Option<HeaderValue>,
}

/// The part kept between attempts. Lives in the executor, so an attempt stopped
/// by its timeout leaves what it received.
#[derive(Default)]
pub struct Resume {
    slot: RefCell<Option<Partial>>,
}

impl Resume {
    /// The offset to resume from and the If-Range value, when a part is kept.
    pub fn range(&self) -> Option<(u64, HeaderValue)> {
        let slot = self.slot.borrow();
        let part = slot.as_ref().filter(|p| p.len > 0)?;
        Some((part.len, part.validator.clone()?))
    }

    /// Readies the slot for a successful response's body: keeps the part when
    /// the response is exactly the rest of it, else starts a new one.
    pub fn begin(
        &self,
        response: &Response,
        asked_from: Option<u64>,
        destination: &Destination,
    ) -> io::Result<()> {
        let appending = asked_from.is_some_and(|from| {
            response.status().as_u16() == 206 && range_start(response) == Some(from)
        });
        if appending {
            report::verbose(
                1,
                &format!(
                    "resuming: the server sent the rest from byte {}",
                    asked_from.unwrap_or(0)
                ),
            );
            return Ok(());
        }
        if let Some(from) = asked_from {
            report::verbose(
                1,
                &format!(
                    "the server did not send the rest from byte {from} (HTTP {}); starting the body again",
                    response.status().as_u16()
                ),
            );
        }
        let Body::File(file) = destination.holder()? else {
            return Err(io::Error::other("-C - needs -o FILE"));
        };
        *self.slot.borrow_mut() = Some(Partial {
            file,
            len: 0,
            validator: validator(response),
        });
        Ok(())
    }

    pub fn write(&self, chunk: &[u8]) -> io::Result<()> {
        let mut slot = self.slot.borrow_mut();
        let part = slot
            .as_mut()
            .ok_or_else(|| io::Error::other("no body begun"))?;
        part.file.write_all(chunk)?;
        part.len += chunk.len() as u64;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.slot.borrow().as_ref().map_or(0, |p| p.len)
    }

    /// The complete body, handed over for delivery.
    pub fn finish(&self) -> Option<Body> {
        self.slot.borrow_mut().take().map(|p| Body::File(p.file))
    }
}

/// A strong ETag, else Last-Modified (RFC 9110 §13.1.5: If-Range needs a strong validator).
fn validator(response: &Response) -> Option<HeaderValue> {
    let headers = response.headers();
    let strong = headers
        .get(ETAG)
        .filter(|v| !v.as_bytes().starts_with(b"W/"));
    strong.or_else(|| headers.get(LAST_MODIFIED)).cloned()
}

/// The first byte of `Content-Range: bytes FIRST-LAST/TOTAL`.
fn range_start(response: &Response) -> Option<u64> {
    let value = response.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    let range = value.trim().strip_prefix("bytes ")?;
    range.split_once('-')?.0.trim().parse().ok()
}
