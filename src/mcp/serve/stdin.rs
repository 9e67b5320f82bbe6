//! The end of stdin, seen as it happens. An MCP client ends a stdio server by closing its
//! stdin; rmcp then lets running calls finish for a few seconds before it cancels them. A
//! task can run for minutes, so the end of input cancels linggen's runs at once instead:
//! each ends as a cancelled run (its calls answered, its session saved) and the server
//! exits promptly.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// A reader that fires `ended` when its input ends (or fails: nothing more will come).
pub(super) struct EndWatch<R> {
    inner: R,
    ended: CancellationToken,
}

impl<R> EndWatch<R> {
    pub(super) fn new(inner: R, ended: CancellationToken) -> Self {
        EndWatch { inner, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EndWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // A read into a full buffer also returns nothing; only one with room says "ended".
        let (room, before) = (buf.remaining() > 0, buf.filled().len());
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &poll {
            Poll::Ready(Ok(())) if room && buf.filled().len() == before => self.ended.cancel(),
            Poll::Ready(Err(_)) => self.ended.cancel(),
            _ => {}
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn fires_once_the_input_is_read_to_its_end() {
        let ended = CancellationToken::new();
        let mut reader = EndWatch::new(&b"{\"jsonrpc\":\"2.0\"}\n"[..], ended.clone());
        let mut first = [0u8; 4];
        reader.read_exact(&mut first).await.unwrap();
        assert!(!ended.is_cancelled());
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert!(ended.is_cancelled());
    }
}
