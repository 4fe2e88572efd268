//! TLS for every HTTP client agentci builds (model providers, MCP servers,
//! telemetry export, the GitHub API, `web_fetch`, `doctor`, git over
//! `https://` in [`crate::git`]): rustls with the
//! `ring` provider, one client configuration shared by all of them, and the
//! system's CA bundle read once, on the first handshake that checks a
//! certificate.
//!
//! Why lazily: reading and parsing the bundle costs milliseconds on every
//! start, and a run whose model, MCP servers and telemetry are all
//! `http://` (a local server, a gateway on loopback, the test suite's fakes)
//! never needs it. Where the bundle comes from is what it was before:
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` when set, else the distribution's
//! usual places (`rustls-native-certs`).
//!
//! A bundle in a folder the run's commands may write is read when the run
//! starts instead ([`pin_roots_written_in`]), before the model acts.
//!
//! Build clients with [`client_builder`], never `reqwest::Client::builder()`:
//! reqwest is built without a default crypto provider, so a client of its
//! own making would have no TLS (`tests/suite/tls.rs` checks that no other
//! module builds one).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// A client builder whose TLS is the shared configuration: connections to
/// `https://` check the server's certificate against the system's CA
/// bundle, read on the first such check; `http://` never reads it.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match config() {
        Some(config) => builder.tls_backend_preconfigured(config.clone()),
        // Unreachable with ring's provider (it has TLS 1.2 and 1.3 suites);
        // the builder's `build()` then fails with reqwest's "unknown TLS
        // backend", which each caller reports as it reports any setup error.
        None => builder.tls_backend_preconfigured(()),
    }
}

/// Whether the system's CA bundle has been read (by a handshake) in this
/// process.
pub fn roots_loaded() -> bool {
    SYSTEM_ROOTS.get().is_some()
}

/// Read the CA bundle now when `cert_file` or `cert_dir` (the values of
/// `SSL_CERT_FILE` and `SSL_CERT_DIR`) lie in one of `writable`, the folders
/// a run's commands may write: the bundle is otherwise read at the first
/// handshake, which may come after the model has acted (a push at the end of
/// the run), and would then trust what the model wrote there. Read now, it
/// is the bundle the user pointed at. Whether it was read now.
pub fn pin_roots_written_in(
    cert_file: Option<&OsStr>,
    cert_dir: Option<&OsStr>,
    writable: &[&Path],
) -> bool {
    if !bundle_written_in(cert_file, cert_dir, writable) {
        return false;
    }
    // A bundle that cannot be read fails the first handshake, as before.
    let _ = system_roots();
    true
}

/// Whether the bundle's path, as given or resolved, lies in one of
/// `writable`, as given or resolved: a symbolic link in a writable folder
/// can be swapped even where it points outside.
fn bundle_written_in(
    cert_file: Option<&OsStr>,
    cert_dir: Option<&OsStr>,
    writable: &[&Path],
) -> bool {
    let set = |value: Option<&OsStr>| value.is_some_and(|v| !v.is_empty());
    if !set(cert_file) && !set(cert_dir) {
        return false;
    }
    let forms = |path: &Path| -> Vec<PathBuf> {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let resolved = path.canonicalize().ok();
        std::iter::once(absolute).chain(resolved).collect()
    };
    let folders: Vec<PathBuf> = writable.iter().flat_map(|f| forms(f)).collect();
    let inside = |path: &Path| {
        forms(path)
            .iter()
            .any(|form| folders.iter().any(|folder| form.starts_with(folder)))
    };
    let file = cert_file.is_some_and(|file| !file.is_empty() && inside(Path::new(file)));
    let dir = cert_dir.is_some_and(|dirs| {
        std::env::split_paths(dirs).any(|d| !d.as_os_str().is_empty() && inside(&d))
    });
    file || dir
}

fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            let provider = rustls::crypto::ring::default_provider();
            // Also the process default, so a client a dependency builds for
            // itself finds a provider instead of panicking; an earlier
            // default (none is installed anywhere else) is left as it is.
            let _ = provider.clone().install_default();
            Arc::new(provider)
        })
        .clone()
}

fn config() -> Option<&'static rustls::ClientConfig> {
    static CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = provider();
            let verifier = Arc::new(SystemRoots {
                algorithms: provider.signature_verification_algorithms,
            });
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .ok()?
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            // reqwest is built without HTTP/2: offer what it speaks, as its
            // own configuration would.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(config)
        })
        .as_ref()
}

/// The verifier built from the system's CA bundle, or why there is none.
static SYSTEM_ROOTS: OnceLock<Result<Arc<WebPkiServerVerifier>, String>> = OnceLock::new();

fn system_roots() -> Result<Arc<WebPkiServerVerifier>, rustls::Error> {
    SYSTEM_ROOTS
        .get_or_init(read_system_roots)
        .clone()
        .map_err(rustls::Error::General)
}

fn read_system_roots() -> Result<Arc<WebPkiServerVerifier>, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found
            .errors
            .first()
            .map(|error| format!(" ({error})"))
            .unwrap_or_default();
        return Err(format!(
            "no CA certificates could be read from the system{why}; install the \
             distribution's ca-certificates package, or set SSL_CERT_FILE to a bundle"
        ));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|error| format!("cannot check certificates with the system's CA bundle: {error}"))
}

/// Checks certificates as webpki does with the system's roots, reading them
/// on the first certificate to check. Handshake signatures need no roots
/// and are checked with the provider's algorithms, as webpki's verifier
/// checks them.
#[derive(Debug)]
struct SystemRoots {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for SystemRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        system_roots()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_is_pinned_only_where_the_runs_commands_may_write() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("etc");
        std::fs::create_dir_all(ws.join("certs")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("certs/ca.pem"), "").unwrap();
        std::fs::write(outside.join("ca.pem"), "").unwrap();
        std::os::unix::fs::symlink(outside.join("ca.pem"), ws.join("link.pem")).unwrap();
        std::os::unix::fs::symlink(ws.join("certs"), outside.join("certs")).unwrap();
        let writable = [ws.as_path()];
        let written = |file: Option<&Path>, dir: Option<&str>| {
            bundle_written_in(file.map(Path::as_os_str), dir.map(OsStr::new), &writable)
        };
        assert!(written(Some(&ws.join("certs/ca.pem")), None));
        assert!(!written(Some(&outside.join("ca.pem")), None));
        assert!(!written(None, None));
        assert!(!written(None, Some("")));
        // The link can be swapped for a file; the folder it names is the model's.
        assert!(written(Some(&ws.join("link.pem")), None));
        assert!(written(Some(&outside.join("certs/ca.pem")), None));
        let dirs = format!("{}:{}", outside.display(), ws.join("certs").display());
        assert!(written(None, Some(&dirs)));
        assert!(!written(None, Some(&outside.display().to_string())));
    }

    #[test]
    fn every_client_shares_one_configuration() {
        let first = config().unwrap() as *const rustls::ClientConfig;
        let second = config().unwrap() as *const rustls::ClientConfig;
        assert_eq!(first, second);
        assert_eq!(config().unwrap().alpn_protocols, [b"http/1.1".to_vec()]);
        client_builder().build().unwrap();
    }

    #[test]
    fn the_verifier_offers_the_providers_schemes() {
        let verifier = SystemRoots {
            algorithms: provider().signature_verification_algorithms,
        };
        let schemes = verifier.supported_verify_schemes();
        assert!(schemes.contains(&SignatureScheme::ECDSA_NISTP256_SHA256));
        assert!(schemes.contains(&SignatureScheme::RSA_PSS_SHA256));
    }
}
