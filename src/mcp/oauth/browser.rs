//! The person's side of a login: the loopback address their browser comes back to
//! (http://127.0.0.1:PORT/callback), or the address they paste when the browser runs on
//! another machine.

use std::collections::BTreeMap;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::LoginError;

/// The address the browser was sent back to: from the loopback redirect, or pasted.
pub(super) async fn wait_for_callback(
    listener: tokio::net::TcpListener,
    can_paste: bool,
) -> Result<String, LoginError> {
    let (pasted_tx, mut pasted) = tokio::sync::mpsc::channel::<String>(1);
    if can_paste {
        // A plain thread, not tokio's stdin: a read blocked on the terminal must not hold
        // the runtime open once the login is over.
        std::thread::spawn(move || {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                if line.contains("code=") || line.contains("error=") {
                    let _ = pasted_tx.blocking_send(line.trim().to_string());
                    return;
                }
                line.clear();
            }
        });
    }
    loop {
        tokio::select! {
            Some(url) = pasted.recv() => return Ok(url),
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(LoginError::Listen)?;
                if let Some(url) = answer_browser(stream).await {
                    return Ok(url);
                }
            }
        }
    }
}

/// Reads one browser request; the full callback address when it is the callback (a
/// favicon or a probe gets a 404 and the wait goes on).
async fn answer_browser(mut stream: tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.lines().next()?.split(' ').nth(1)?.to_string();
    let port = stream.local_addr().ok()?.port();
    let is_callback = target.starts_with("/callback?");
    let (status, body) = if !is_callback {
        ("404 Not Found", "Not the sign-in callback.")
    } else if target.contains("error=") {
        (
            "200 OK",
            "linggen: the sign-in was refused. You can close this tab.",
        )
    } else {
        (
            "200 OK",
            "linggen: signed in. You can close this tab and go back to the terminal.",
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    is_callback.then(|| format!("http://127.0.0.1:{port}{target}"))
}

/// The server refused the login's redirect (`?error=…`): what it said.
pub(super) fn refused(callback: &str) -> Option<String> {
    let url = url::Url::parse(callback).ok()?;
    let pairs: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    let error = pairs.get("error")?;
    Some(match pairs.get("error_description") {
        Some(description) => format!("{error}: {description}"),
        None => error.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::refused;

    #[test]
    fn a_refused_sign_in_says_what_the_server_said() {
        assert_eq!(
            refused("http://127.0.0.1:1/callback?error=access_denied&error_description=no+thanks")
                .as_deref(),
            Some("access_denied: no thanks")
        );
        assert_eq!(refused("http://127.0.0.1:1/callback?code=a&state=b"), None);
    }
}
