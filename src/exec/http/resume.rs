//! `-C -` with `-o`: a body cut off mid-way stays in the temporary file beside
//! the target, and the next attempt asks for the rest (`Range: bytes=N-`, with
//! `If-Range` carrying the first response's strong ETag, else its Last-Modified).
//! A 206 is appended only when it is provably that rest: the validator sent comes
//! back, its Content-Range starts at N and ends at the first response's declared
//! length, which it names as the total. Anything else (another version of the
//! resource, a range that overlaps or overruns) discards the part, and the body is
//! fetched again from zero. A response with no validator or no declared length is
//! never resumed, and the file is complete only when exactly as long as declared:
//! two versions of a resource are never glued together.

use std::cell::RefCell;
use std::io::{self, Write};

use reqwest::Response;
use reqwest::header::{
    CONTENT_LENGTH, CONTENT_RANGE, ETAG, HeaderMap, HeaderName, HeaderValue, LAST_MODIFIED,
};

use super::output::Body;
use crate::config::http::Destination;
use crate::files::Replacement;
use crate::report;

/// What identifies the version a part belongs to (RFC 9110 §13.1.5: If-Range
/// takes a strong validator).
#[derive(Clone)]
struct Validator {
    header: HeaderName,
    value: HeaderValue,
}

struct Partial {
    file: Replacement,
    len: u64,
    validator: Option<Validator>,
    /// The first response's declared length: what the whole body must come to.
    total: Option<u64>,
    /// The part is an `-o` file that was there before the run: nothing says what
    /// version it is, so the rest is asked for without If-Range, as curl asks.
    existing: bool,
}

/// What a request for the rest asks for.
pub struct Asked {
    pub from: u64,
    /// What If-Range carries; none for a file that was there before the run.
    pub validator: Option<HeaderValue>,
}

/// The part kept between attempts. Lives in the executor, so an attempt stopped
/// by its timeout leaves what it received.
#[derive(Default)]
pub struct Resume {
    slot: RefCell<Option<Partial>>,
}

impl Resume {
    /// Takes an `-o` file that is there before the first attempt as the part received,
    /// as curl's `-C -` does: a copy beside it is completed, and put in its place only whole.
    pub fn adopt(&self, destination: &Destination) -> io::Result<()> {
        let Destination::File { path, .. } = destination else {
            return Ok(());
        };
        let mut existing = match std::fs::File::open(path) {
            Ok(file) if file.metadata()?.is_file() && file.metadata()?.len() > 0 => file,
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let Body::File(mut file) = super::output::holder(destination)? else {
            return Ok(());
        };
        let len = io::copy(&mut existing, &mut file)?;
        report::verbose(
            1,
            &format!(
                "resuming: {} has {len} bytes; asking for the rest",
                path.display()
            ),
        );
        *self.slot.borrow_mut() = Some(Partial {
            file,
            len,
            validator: None,
            total: None,
            existing: true,
        });
        Ok(())
    }

    /// The rest to ask for, when a part is kept that can be checked and completed.
    pub fn range(&self) -> Option<Asked> {
        let slot = self.slot.borrow();
        let part = slot.as_ref()?;
        if part.existing {
            return Some(Asked {
                from: part.len,
                validator: None,
            });
        }
        let total = part.total?;
        (part.len > 0 && part.len < total).then_some(())?;
        Some(Asked {
            from: part.len,
            validator: Some(part.validator.as_ref()?.value.clone()),
        })
    }

    /// Whether `response` to a request for the rest is exactly that rest of the
    /// same version; says why not at `-v`.
    pub fn fits(&self, response: &Response, asked: &Asked) -> bool {
        let mut slot = self.slot.borrow_mut();
        let Some(part) = slot.as_mut() else {
            return false;
        };
        if part.existing {
            // The 206 names the total; from here on it is checked as any kept part.
            let headers = response.headers();
            part.total = content_range(headers).map(|(_, _, total)| total);
            part.validator = validator(headers);
        }
        let why_not = mismatch(part, response.headers(), asked.from);
        if let Some(why) = &why_not {
            report::verbose(
                1,
                &format!(
                    "the 206 is not the rest of the part kept ({why}); fetching the whole body again"
                ),
            );
        }
        why_not.is_none()
    }

    /// Drops the part kept: the next request asks for the whole body.
    pub fn discard(&self) {
        self.slot.borrow_mut().take();
    }

    /// Readies the slot for a successful response's body: with `appending`, the
    /// response is the rest of the part (checked by `fits`); else it starts a new part.
    pub fn begin(
        &self,
        response: &Response,
        appending: bool,
        destination: &Destination,
    ) -> io::Result<()> {
        if appending {
            report::verbose(
                1,
                &format!(
                    "resuming: the server sent the rest from byte {}",
                    self.len()
                ),
            );
            if let Some(part) = self.slot.borrow_mut().as_mut() {
                part.existing = false;
            }
            return Ok(());
        }
        let Body::File(file) = super::output::holder(destination)? else {
            return Err(io::Error::other("-C - needs -o FILE"));
        };
        let headers = response.headers();
        *self.slot.borrow_mut() = Some(Partial {
            file,
            len: 0,
            validator: validator(headers),
            total: number(headers, CONTENT_LENGTH),
            existing: false,
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

    /// The complete body, handed over for delivery; `Err` (and the part dropped)
    /// when it is not exactly as long as the first response declared.
    pub fn finish(&self) -> Result<Body, String> {
        let part = self
            .slot
            .borrow_mut()
            .take()
            .ok_or_else(|| "the kept part is gone".to_string())?;
        match part.total {
            Some(total) if total != part.len => Err(format!(
                "the resumed body came to {} bytes, not the {total} the first response declared",
                part.len
            )),
            _ => Ok(Body::File(part.file)),
        }
    }
}

/// Why a 206 is not the rest of `part` from byte `from`, if it is not.
fn mismatch(part: &Partial, headers: &HeaderMap, from: u64) -> Option<String> {
    let (Some(validator), Some(total)) = (&part.validator, part.total) else {
        return Some("nothing to check it against".into());
    };
    // A file there before the run has no validator of its own: the 206 gives the one
    // later attempts send.
    if !part.existing && headers.get(&validator.header) != Some(&validator.value) {
        let got = headers.get(&validator.header).map_or("none".into(), |v| {
            String::from_utf8_lossy(v.as_bytes()).into_owned()
        });
        return Some(format!(
            "its {} is {got}, another version",
            validator.header
        ));
    }
    let expected = (from, total - 1, total);
    match content_range(headers) {
        Some(range) if range == expected => None,
        Some((first, last, whole)) => Some(format!(
            "Content-Range bytes {first}-{last}/{whole}, not {from}-{}/{total}",
            total - 1
        )),
        None => Some("no Content-Range with a total".into()),
    }
}

/// A strong ETag, else Last-Modified.
fn validator(headers: &HeaderMap) -> Option<Validator> {
    let strong = headers
        .get(ETAG)
        .filter(|v| !v.as_bytes().starts_with(b"W/"));
    match (strong, headers.get(ETAG), headers.get(LAST_MODIFIED)) {
        (Some(etag), _, _) => Some(Validator {
            header: ETAG,
            value: etag.clone(),
        }),
        // A weak ETag names the version too loosely to glue parts by.
        (None, Some(_), _) => None,
        (None, None, Some(modified)) => Some(Validator {
            header: LAST_MODIFIED,
            value: modified.clone(),
        }),
        (None, None, None) => None,
    }
}

fn number(headers: &HeaderMap, name: HeaderName) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// `Content-Range: bytes FIRST-LAST/TOTAL` (RFC 9110 §14.4); `None` for an unknown
/// total (`*`) or anything malformed.
fn content_range(headers: &HeaderMap) -> Option<(u64, u64, u64)> {
    let value = headers.get(CONTENT_RANGE)?.to_str().ok()?;
    let range = value.trim().strip_prefix("bytes ")?;
    let (span, total) = range.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let parse = |s: &str| s.trim().parse::<u64>().ok();
    let (first, last, total) = (parse(first)?, parse(last)?, parse(total)?);
    (first <= last && last < total).then_some((first, last, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn content_ranges_are_read_as_rfc_9110_writes_them() {
        let range = |v: &str| content_range(&headers(&[("content-range", v)]));
        assert_eq!(range("bytes 5-9/10"), Some((5, 9, 10)));
        assert_eq!(range("bytes 5-9/*"), None);
        assert_eq!(range("bytes 9-5/10"), None);
        assert_eq!(range("bytes 5-10/10"), None, "runs past the total");
        assert_eq!(range("5-9/10"), None);
    }

    #[test]
    fn the_validator_is_a_strong_etag_else_last_modified() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        let v = validator(&headers(&[("etag", "\"a\""), ("last-modified", date)])).unwrap();
        assert_eq!(
            (v.header, v.value),
            (ETAG, HeaderValue::from_static("\"a\""))
        );
        let v = validator(&headers(&[("last-modified", date)])).unwrap();
        assert_eq!(v.header, LAST_MODIFIED);
        assert!(validator(&headers(&[("etag", "W/\"a\""), ("last-modified", date)])).is_none());
        assert!(validator(&headers(&[])).is_none());
    }
}
