"""A private CA and a loopback server certificate for the embedded emulator.

Why TLS on a loopback emulator: the AWS SDK v1 inside hadoop-aws (s3a) refuses to send SSE-KMS
parameters over plain HTTP ("HTTPS must be used when sending customer encryption keys"), and its
copy-on-commit carries the source object's KMS settings even when the job sets none.  Serving
the emulator over HTTPS lets local Spark write with SSE-KMS and the tenant key exactly as it does on
AWS, and keeps the bucket policy's TLS-only rule meaningful in local mode.

Files (under ``<state_dir>/tls/``, created once, reused):
  ``ca.pem``            the CA certificate: point ``AWS_CA_BUNDLE`` (boto3, terraform) at it;
  ``server.pem/.key``   the emulator's certificate for 127.0.0.1 and localhost, signed by the CA;
  ``truststore.p12``    the CA as a PKCS#12 trust store for the JVM (Spark): password ``changeit``.
"""
from __future__ import annotations

import datetime
import ipaddress
import subprocess
from pathlib import Path

TRUSTSTORE_PASSWORD = "changeit"  # pragma: allowlist secret - the JVM's conventional trust-store password; guards no secret
VALID_DAYS = 3650


def tls_dir(state_dir: Path | str) -> Path:
    return Path(state_dir) / "tls"


def ensure_certificates(state_dir: Path | str) -> Path:
    """Create the CA, server certificate and JVM trust store if missing; return the tls dir."""
    out = tls_dir(state_dir)
    needed = [out / n for n in ("ca.pem", "server.pem", "server.key", "truststore.p12")]
    if all(p.is_file() for p in needed):
        return out
    out.mkdir(parents=True, exist_ok=True)
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tenantlake local emulator CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (out / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (out / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file = out / "server.key"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_file.chmod(0o600)
    store = out / "truststore.p12"
    store.unlink(missing_ok=True)
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", "tenantlake-local-ca", "-file", str(out / "ca.pem"),
         "-keystore", str(store), "-storetype", "PKCS12", "-storepass", TRUSTSTORE_PASSWORD],
        check=True, capture_output=True, timeout=120,
    )
    return out
