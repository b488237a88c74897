//! TLS for PostgreSQL connections: rustls with the ring provider, and the
//! certificate checks each `sslmode` asks for (`require` checks nothing,
//! `verify-ca` the chain only, `verify-full` the chain and the name).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::url::{PgTarget, SslMode};

/// rustls with the ring provider; certificate checks as `sslmode` asks.
pub(super) fn tls_config(target: &PgTarget) -> anyhow::Result<ClientConfig> {
    // Another part of the program may have installed it already; either way one is in place.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?;
    let algorithms = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ServerCertVerifier> = match target.sslmode {
        SslMode::VerifyFull | SslMode::VerifyCa => {
            let roots = Arc::new(root_certificates(target)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider).build()?;
            if target.sslmode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(Lenient {
                    algorithms,
                    chain: Some(webpki),
                })
            }
        }
        _ => Arc::new(Lenient {
            algorithms,
            chain: None,
        }),
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(config)
}

/// `sslrootcert`, else `~/.postgresql/root.crt` (libpq's default).
fn root_certificates(target: &PgTarget) -> anyhow::Result<RootCertStore> {
    let path = target
        .sslrootcert
        .clone()
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".postgresql/root.crt")))
        .context("sslmode=verify-ca/verify-full needs sslrootcert=FILE")?;
    let pem = std::fs::read(&path)
        .with_context(|| format!("cannot read the root certificates {}", path.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.with_context(|| format!("bad PEM in {}", path.display()))?;
        roots.add(cert)?;
    }
    anyhow::ensure!(!roots.is_empty(), "no certificates in {}", path.display());
    Ok(roots)
}

/// The checks libpq makes below `verify-full`: with no `chain`, none at all
/// (`prefer`/`require`: encryption without authentication); with one, the chain
/// must verify but its name may differ from the host (`verify-ca`). Handshake
/// signatures are always checked.
#[derive(Debug)]
struct Lenient {
    algorithms: WebPkiSupportedAlgorithms,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
