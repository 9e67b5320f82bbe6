//! AWS Signature Version 4 for one request, as the AWS SDKs compute it for services other
//! than S3: the canonical URI is the path as sent, encoded once more (so a model id's `:`,
//! sent as `%3A`, is signed as `%253A`), the query sorted, the headers lowercased and
//! sorted, the payload hashed.

use ring::{digest, hmac};

/// Credentials to sign with.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret, even in a debug dump.
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// What is signed.
pub struct Request<'a> {
    pub method: &'a str,
    /// The path exactly as it goes on the wire (already percent-encoded).
    pub path: &'a str,
    /// `a=1&b=2` as sent, or empty.
    pub query: &'a str,
    /// Every header to sign, `host` and `x-amz-date` included.
    pub headers: &'a [(&'a str, String)],
    pub payload: &'a [u8],
}

/// Where and when.
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
    /// `20150830T123600Z`.
    pub amz_date: &'a str,
}

/// The `Authorization` header value.
pub fn authorization(creds: &Credentials, scope: &Scope<'_>, request: &Request<'_>) -> String {
    let (signed_headers, canonical) = canonical_request(request);
    let date = &scope.amz_date[..8.min(scope.amz_date.len())];
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{credential_scope}\n{}",
        scope.amz_date,
        sha256_hex(canonical.as_bytes())
    );
    let key = signing_key(&creds.secret_access_key, date, scope.region, scope.service);
    let signature = hex(hmac::sign(&key, string_to_sign.as_bytes()).as_ref());
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed_headers}, Signature={signature}",
        creds.access_key_id
    )
}

/// (`host;x-amz-date`, the canonical request).
fn canonical_request(request: &Request<'_>) -> (String, String) {
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), normalize_spaces(value)))
        .collect();
    headers.sort();
    let signed: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
    let signed = signed.join(";");
    let canonical_headers: String = headers
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect();
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed}\n{}",
        request.method,
        canonical_uri(request.path),
        canonical_query(request.query),
        sha256_hex(request.payload)
    );
    (signed, canonical)
}

/// The path as sent, each byte outside the unreserved set (and `/`) encoded again.
fn canonical_uri(path: &str) -> String {
    if path.is_empty() {
        return "/".to_string();
    }
    path.split('/')
        .map(|segment| encode(segment.as_bytes()))
        .collect::<Vec<_>>()
        .join("/")
}

/// Query parameters sorted by name, then value, each encoded.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (encode(k.as_bytes()), encode(v.as_bytes()))
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes everything but `A-Z a-z 0-9 - _ . ~`, in upper-case hex.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Header values are trimmed and inner runs of spaces collapse to one.
fn normalize_spaces(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> hmac::Key {
    let step = |key: &[u8], data: &str| {
        hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
    };
    let k_date = step(format!("AWS4{secret}").as_bytes(), date);
    let k_region = step(k_date.as_ref(), region);
    let k_service = step(k_region.as_ref(), service);
    let k_signing = step(k_service.as_ref(), "aws4_request");
    hmac::Key::new(hmac::HMAC_SHA256, k_signing.as_ref())
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `20150830T123600Z` for a time in seconds since the epoch (UTC).
pub fn amz_date(unix_secs: u64) -> String {
    let t = crate::clock::Utc::from_unix(unix_secs as i64);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The credentials and scope of AWS's published SigV4 test suite.
    fn suite(method: &str, path: &str, query: &str) -> String {
        let creds = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let scope = Scope {
            region: "us-east-1",
            service: "service",
            amz_date: "20150830T123600Z",
        };
        let headers = [
            ("Host", "example.amazonaws.com".to_string()),
            ("X-Amz-Date", "20150830T123600Z".to_string()),
        ];
        let request = Request {
            method,
            path,
            query,
            headers: &headers,
            payload: b"",
        };
        authorization(&creds, &scope, &request)
    }

    #[test]
    fn the_aws_test_suite_vectors() {
        let prefix = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=";
        for (name, method, path, query, signature) in [
            (
                "get-vanilla",
                "GET",
                "/",
                "",
                "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
            ),
            (
                "get-vanilla-query-order-key-case",
                "GET",
                "/",
                "Param2=value2&Param1=value1",
                "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
            ),
            (
                "get-utf8",
                "GET",
                "/ሴ",
                "",
                "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
            ),
            (
                "post-vanilla",
                "POST",
                "/",
                "",
                "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
            ),
        ] {
            assert_eq!(
                suite(method, path, query),
                format!("{prefix}{signature}"),
                "{name}"
            );
        }
    }

    #[test]
    fn the_documented_signing_key() {
        let key = signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20120215",
            "us-east-1",
            "iam",
        );
        // The key itself is opaque in ring; sign nothing with it and compare with the HMAC
        // of nothing under the documented key.
        let documented = [
            0xf4, 0x78, 0x0e, 0x2d, 0x9f, 0x65, 0xfa, 0x89, 0x5f, 0x9c, 0x67, 0xb3, 0x2c, 0xe1,
            0xba, 0xf0, 0xb0, 0xd8, 0xa4, 0x35, 0x05, 0xa0, 0x00, 0xa1, 0xa9, 0xe0, 0x90, 0xd4,
            0x14, 0xdb, 0x40, 0x4d,
        ];
        let expected = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &documented), b"x");
        assert_eq!(hmac::sign(&key, b"x").as_ref(), expected.as_ref());
    }

    #[test]
    fn a_model_ids_colon_is_signed_encoded_twice() {
        let (_, canonical) = canonical_request(&Request {
            method: "POST",
            path: "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream",
            query: "",
            headers: &[],
            payload: b"{}",
        });
        assert!(
            canonical
                .contains("\n/model/anthropic.claude-3-haiku-20240307-v1%253A0/converse-stream\n"),
            "{canonical}"
        );
    }

    #[test]
    fn dates_in_the_amz_format() {
        assert_eq!(amz_date(1_440_938_160), "20150830T123600Z");
        assert_eq!(amz_date(0), "19700101T000000Z");
        assert_eq!(amz_date(951_782_400), "20000229T000000Z");
    }
}
