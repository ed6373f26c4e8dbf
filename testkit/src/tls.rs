//! An HTTPS server on 127.0.0.1 for tests (feature `tls`): axum on rustls, with a
//! certificate for `127.0.0.1` signed by a CA made per server (rcgen), whose PEM is
//! written for the client under test to trust (a `--ca-file`). Nothing leaves the
//! machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// A running HTTPS server; it stops when dropped (its runtime with it).
pub struct TlsServer {
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    /// The PEM of the CA that signed the server's certificate.
    pub ca_file: PathBuf,
    _runtime: tokio::runtime::Runtime,
}

impl TlsServer {
    /// Serves the router `app(base)` makes (given the server's own base URL) over HTTPS,
    /// the CA's certificate written to `<dir>/ca.pem`.
    ///
    /// # Panics
    /// When the certificates, the socket or the runtime cannot be made.
    pub fn start(dir: &Path, app: impl FnOnce(&str) -> Router) -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "referee test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
        let leaf_key = rcgen::KeyPair::generate().expect("server key");
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .and_then(|params| params.signed_by(&leaf_key, &ca))
            .expect("server certificate");
        let ca_file = dir.join("ca.pem");
        fs::write(&ca_file, ca.pem()).expect("write ca.pem");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .expect("TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let base = format!("https://{}", listener.local_addr().expect("address"));
        let app = app(&base);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(
                            hyper_util::rt::TokioIo::new(tls),
                            hyper_util::service::TowerToHyperService::new(app),
                        )
                        .await;
                });
            }
        });
        Self {
            base,
            ca_file,
            _runtime: runtime,
        }
    }
}
