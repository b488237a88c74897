//! TLS as curl does it with `--cacert FILE`, and TLS failures said in words.
//!
//! With `--cacert`, a certificate the server presents that is byte for byte one of
//! FILE's is trusted as that server's own, as OpenSSL trusts a leaf found in its trust
//! store: even when it is marked as a CA (OpenSSL 3's `req -x509` default) or names
//! the host only in its subject's CN. Its dates and the host name are still checked.
//! Any other certificate must chain to FILE's as usual (WebPKI), with the CN read
//! only when the certificate has no DNS or IP subject alternative name, as curl does.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::Context;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_name};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore, SignatureScheme,
};
use x509_cert::der::Decode;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use crate::config::http::{ClientSettings, HttpVersion};

/// The TLS set-up `--cacert` needs, or `None` when the HTTP client's own will do
/// (no `--cacert`, or `-k`, which checks nothing).
pub fn config(settings: &ClientSettings) -> anyhow::Result<Option<ClientConfig>> {
    let Some(certs) = settings.ca_certs.as_ref().filter(|_| !settings.insecure) else {
        return Ok(None);
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert.clone())
            .context("--cacert: a certificate in FILE cannot be read")?;
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .context("--cacert: no usable certificate in FILE")?;
    let verifier = Arc::new(CacertVerifier {
        own: certs.clone(),
        webpki,
    });
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("cannot set up TLS")?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut tls = match &settings.identity {
        Some(identity) => {
            let (chain, key) = client_certificate(&identity.pem)?;
            builder
                .with_client_auth_cert(chain, key)
                .context("--cert: the certificate and key do not go together")?
        }
        None => builder.with_no_client_auth(),
    };
    // What the HTTP client offers by ALPN when it sets TLS up itself.
    tls.alpn_protocols = match settings.version {
        HttpVersion::Http1Only => vec![b"http/1.1".to_vec()],
        HttpVersion::Http2 {
            prior_knowledge: true,
        } => vec![b"h2".to_vec()],
        _ => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(Some(tls))
}

/// The client certificate chain and key from `--cert` (and `--key`) PEM.
fn client_certificate(
    pem: &[u8],
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .context("--cert: expected PEM certificates")?;
    let key = PrivateKeyDer::from_pem_slice(pem).context("--cert: expected a PEM private key")?;
    Ok((chain, key))
}

/// `--cacert`'s trust: the server's own certificate found in FILE, or a chain to FILE.
#[derive(Debug)]
struct CacertVerifier {
    /// FILE's certificates, byte for byte.
    own: Vec<CertificateDer<'static>>,
    webpki: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for CacertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if self.own.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            return own_certificate(end_entity, server_name, now);
        }
        let checked = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        // The chain is checked before the name: a name error means the chain is good.
        match checked {
            Err(e) if is_name_error(&e) => names_by_cn(end_entity, server_name, e),
            other => other,
        }
    }

    // The handshake's signatures are checked as WebPKI checks them, whoever's the certificate.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// A certificate of FILE presented by the server: trusted as its own once its dates
/// and the host name check out. The handshake's signature proves the server holds its key.
fn own_certificate(
    cert: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
) -> Result<ServerCertVerified, Error> {
    let parsed = x509_cert::Certificate::from_der(cert.as_ref())
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let validity = &parsed.tbs_certificate.validity;
    let not_before = UnixTime::since_unix_epoch(validity.not_before.to_unix_duration());
    let not_after = UnixTime::since_unix_epoch(validity.not_after.to_unix_duration());
    if now.as_secs() < not_before.as_secs() {
        let context = CertificateError::NotValidYetContext {
            time: now,
            not_before,
        };
        return Err(Error::InvalidCertificate(context));
    }
    if now.as_secs() > not_after.as_secs() {
        let context = CertificateError::ExpiredContext {
            time: now,
            not_after,
        };
        return Err(Error::InvalidCertificate(context));
    }
    match verify_server_name(&ParsedCertificate::try_from(cert)?, server_name) {
        Err(e) if is_name_error(&e) => names_by_cn(cert, server_name, e),
        Err(e) => Err(e),
        Ok(()) => Ok(ServerCertVerified::assertion()),
    }
}

fn is_name_error(err: &Error) -> bool {
    matches!(
        err,
        Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        )
    )
}

/// curl's fallback: a certificate with no DNS or IP subject alternative name is
/// checked against its subject's CN. Otherwise `refused` stands, with every name
/// the certificate gives (the CN included) for the message.
fn names_by_cn(
    cert: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    refused: Error,
) -> Result<ServerCertVerified, Error> {
    let Ok(parsed) = x509_cert::Certificate::from_der(cert.as_ref()) else {
        return Err(refused);
    };
    let names = Names::of(&parsed);
    if names.alt.is_empty() && names.cn.iter().any(|cn| cn_matches(cn, server_name)) {
        return Ok(ServerCertVerified::assertion());
    }
    let mut presented = names.alt;
    presented.extend(names.cn.into_iter().map(|cn| format!("CN={cn}")));
    Err(Error::InvalidCertificate(
        CertificateError::NotValidForNameContext {
            expected: server_name.to_owned(),
            presented,
        },
    ))
}

/// The names a certificate is issued for.
struct Names {
    /// DNS and IP subject alternative names.
    alt: Vec<String>,
    /// The subject's common names.
    cn: Vec<String>,
}

impl Names {
    fn of(cert: &x509_cert::Certificate) -> Names {
        let tbs = &cert.tbs_certificate;
        let alt = match tbs.get::<SubjectAltName>() {
            Ok(Some((_, san))) => san.0.iter().filter_map(general_name).collect(),
            _ => Vec::new(),
        };
        let cn = tbs
            .subject
            .0
            .iter()
            .flat_map(|rdn| rdn.0.iter())
            .filter(|atv| atv.oid == x509_cert::der::oid::db::rfc4519::CN)
            .map(|atv| String::from_utf8_lossy(atv.value.value()).into_owned())
            .collect();
        Names { alt, cn }
    }
}

fn general_name(name: &GeneralName) -> Option<String> {
    match name {
        GeneralName::DnsName(dns) => Some(dns.to_string()),
        GeneralName::IpAddress(ip) => ip_text(ip.as_bytes()),
        _ => None,
    }
}

fn ip_text(bytes: &[u8]) -> Option<String> {
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    Some(ip.to_string())
}

/// A CN against the host: equal without regard to case, or `*.` for one leftmost
/// label of a name with at least three labels; an address only exactly.
fn cn_matches(cn: &str, server_name: &ServerName<'_>) -> bool {
    match server_name {
        ServerName::DnsName(dns) => {
            let host = dns.as_ref().trim_end_matches('.');
            if cn.eq_ignore_ascii_case(host) {
                return true;
            }
            let Some(suffix) = cn.strip_prefix("*.") else {
                return false;
            };
            let Some((label, rest)) = host.split_once('.') else {
                return false;
            };
            !label.is_empty() && suffix.contains('.') && rest.eq_ignore_ascii_case(suffix)
        }
        ServerName::IpAddress(ip) => cn.parse::<IpAddr>() == Ok(IpAddr::from(*ip)),
        _ => false,
    }
}

/// A TLS failure in words, never a library's debug text.
pub fn describe(err: &Error) -> String {
    match err {
        Error::InvalidCertificate(e) => certificate_words(e),
        Error::NoCertificatesPresented => "the server presented no certificate".into(),
        Error::AlertReceived(alert) => format!(
            "the server ended the handshake with the alert '{}'",
            words(&format!("{alert:?}"))
        ),
        Error::PeerIncompatible(why) => format!(
            "the server and retry have no TLS in common: {}",
            words(&format!("{why:?}"))
        ),
        Error::PeerMisbehaved(why) => format!(
            "the server broke the TLS protocol: {}",
            words(&format!("{why:?}"))
        ),
        Error::InvalidMessage(_) => "the server sent something that is not TLS".into(),
        Error::NoApplicationProtocol => {
            "the server speaks none of the protocols offered (ALPN)".into()
        }
        Error::General(text) => text.clone(),
        other => other.to_string(),
    }
}

fn certificate_words(err: &CertificateError) -> String {
    use CertificateError as C;
    match err {
        C::Expired => "the certificate has expired".into(),
        C::ExpiredContext { not_after, .. } => {
            format!("the certificate expired on {}", date(*not_after))
        }
        C::NotValidYet => "the certificate is not valid yet".into(),
        C::NotValidYetContext { not_before, .. } => {
            format!("the certificate is not valid before {}", date(*not_before))
        }
        C::NotValidForName => "the certificate is issued for another host".into(),
        C::NotValidForNameContext {
            expected,
            presented,
        } => {
            let host = match expected {
                ServerName::DnsName(dns) => dns.as_ref().to_string(),
                ServerName::IpAddress(ip) => IpAddr::from(*ip).to_string(),
                other => format!("{other:?}"),
            };
            match presented.as_slice() {
                [] => format!("the certificate names no host, so not {host}"),
                names => format!(
                    "the certificate is issued for {}, not {host}",
                    names.join(", ")
                ),
            }
        }
        C::UnknownIssuer => "the certificate is signed by an unknown authority".into(),
        C::BadSignature => "the certificate's signature is not valid".into(),
        C::BadEncoding => "the certificate cannot be read".into(),
        C::Revoked => "the certificate has been revoked".into(),
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            "the certificate is not for server authentication (extended key usage)".into()
        }
        C::UnhandledCriticalExtension => {
            "the certificate has a critical extension that cannot be checked".into()
        }
        C::Other(other) => match other.0.downcast_ref::<webpki::Error>() {
            Some(e) => webpki_words(e),
            None => format!("the certificate was not accepted: {}", other.0),
        },
        other => format!("the certificate was not accepted: {other}"),
    }
}

/// The WebPKI checks rustls passes on as they are.
fn webpki_words(err: &webpki::Error) -> String {
    use webpki::Error as W;
    match err {
        W::CaUsedAsEndEntity => {
            "the certificate is a CA's (CA:TRUE), which is trusted as a server's own only \
             when it is in --cacert FILE"
                .into()
        }
        W::EndEntityUsedAsCa => "a certificate in the chain is a server's, not a CA's".into(),
        W::CertDistrusted => "the certificate's authority is distrusted".into(),
        W::InvalidCertValidity => "the certificate's validity dates are not valid".into(),
        W::MaximumPathDepthExceeded | W::PathLenConstraintViolated => {
            "the certificate chain is too long for its authorities".into()
        }
        W::NameConstraintViolation => {
            "the certificate names a host its authority may not certify".into()
        }
        W::RequiredEkuNotFoundContext(_) => {
            "the certificate is not for server authentication (extended key usage)".into()
        }
        other => format!(
            "the certificate was not accepted ({})",
            words(&format!("{other:?}"))
        ),
    }
}

/// `HandshakeFailure` → `handshake failure`: a variant's name as words, its fields dropped.
fn words(debug: &str) -> String {
    let name = debug.split(['(', '{', ' ']).next().unwrap_or(debug);
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// A certificate date, as `2026-03-01 12:00:00 UTC`.
fn date(t: UnixTime) -> String {
    i64::try_from(t.as_secs())
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(
            || format!("{} seconds after 1970", t.as_secs()),
            |ts| ts.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dns(name: &str) -> ServerName<'static> {
        ServerName::try_from(name.to_string()).unwrap()
    }

    #[test]
    fn a_cn_matches_the_host_or_one_wildcard_label() {
        assert!(cn_matches("localhost", &dns("LOCALHOST")));
        assert!(cn_matches("*.example.test", &dns("a.example.test")));
        assert!(!cn_matches("*.example.test", &dns("a.b.example.test")));
        assert!(!cn_matches("*.test", &dns("example.test")));
        assert!(!cn_matches("other", &dns("localhost")));
        let ip = ServerName::IpAddress("127.0.0.1".parse::<IpAddr>().unwrap().into());
        assert!(cn_matches("127.0.0.1", &ip));
        assert!(!cn_matches("127.0.0.2", &ip));
    }

    #[test]
    fn failures_are_words_without_debug_text() {
        let expired = Error::InvalidCertificate(CertificateError::ExpiredContext {
            time: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_800_000_000)),
            not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_700_000_000)),
        });
        assert_eq!(
            describe(&expired),
            "the certificate expired on 2023-11-14 22:13:20 UTC"
        );
        let name = Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: dns("localhost"),
            presented: vec!["a.test".into(), "CN=b.test".into()],
        });
        assert_eq!(
            describe(&name),
            "the certificate is issued for a.test, CN=b.test, not localhost"
        );
        let ca = Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(
            webpki::Error::CaUsedAsEndEntity,
        ))));
        let text = describe(&ca);
        assert!(
            text.contains("CA:TRUE") && !text.contains("CaUsed"),
            "{text}"
        );
        assert_eq!(
            describe(&Error::AlertReceived(
                rustls::AlertDescription::HandshakeFailure
            )),
            "the server ended the handshake with the alert 'handshake failure'"
        );
    }
}
