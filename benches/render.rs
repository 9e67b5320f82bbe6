//! Markdown stream rendering throughput (method and results: doc/rendering.md).
//!
//! Builds a ~1 MiB answer of the shape models produce (headings, paragraphs with inline
//! markup, nested lists, tables, and code blocks in Rust, Python and JSON), feeds it to
//! `MarkdownStream` in chunks of 4-16 bytes as a token stream would arrive, and prints the
//! median wall and CPU time per MiB, styled (dark theme, syntect) and plain.

// A benchmark that cannot run its setup should stop with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use linggen::repl::render::{MarkdownStream, RenderStyle};
use linggen::repl::theme;

const MIB: usize = 1 << 20;
const RUNS: usize = 5;
const WIDTH: u16 = 100;

const SECTION: &str = r#"## Step {n}: wire the **router** to the `config`

The router picks a model per request. It reads `default_model` from the *layered*
configuration, then falls back in order; see [the docs](https://example.com/docs/router) for details.
This paragraph is long enough that it has to be wrapped at the terminal width at least once or twice, like real answers.

1. Load the configuration
   - defaults, then `$LINGGEN_HOME/linggen-agent.toml`
   - then the workspace file, environment and flags
2. Resolve the model id
   - ~~by name~~ by id, with a helpful error
3. Build the provider

| Provider | Protocol | Streams | Notes |
|:---------|:--------:|--------:|-------|
| ollama | NDJSON | yes | local default |
| openai | SSE | yes | also llama.cpp, vLLM |
| anthropic | SSE | yes | tool use blocks |

```rust
/// Picks the provider for a request.
pub fn pick(&self, request: &Request) -> Result<&dyn Provider, RouterError> {
    let id = request.model.as_deref().unwrap_or(&self.default_model);
    for (index, model) in self.models.iter().enumerate() {
        if model.id == id {
            tracing::debug!(index, "picked {}", model.id);
            return Ok(self.providers[index].as_ref());
        }
    }
    Err(RouterError::UnknownModel { id: id.to_string(), known: self.ids() })
}
```

```python
def summarize(rows: list[dict]) -> dict:
    """Counts calls per tool."""
    counts = {}
    for row in rows:
        counts[row["tool"]] = counts.get(row["tool"], 0) + 1
    return {"total": sum(counts.values()), **counts}
```

```json
{"models": [{"id": "local", "provider": "ollama", "context_window": 32768}]}
```

> Note: a broken model entry names the file and line it came from.

"#;

fn answer() -> String {
    let mut text = String::with_capacity(MIB + SECTION.len());
    let mut n = 0;
    while text.len() < MIB {
        n += 1;
        text.push_str(&SECTION.replace("{n}", &n.to_string()));
    }
    text
}

/// Chunk boundaries of 4-16 bytes from a fixed-seed generator, moved forward to character
/// boundaries: the same chunks every run.
fn chunks(text: &str) -> Vec<&str> {
    let mut seed: u32 = 0x2545_f491;
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let mut end = (4 + (seed >> 16) as usize % 13).min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One full render; returns (wall, cpu, lines produced).
fn render(style: &RenderStyle, chunks: &[&str]) -> (Duration, Duration, usize) {
    let (wall, cpu) = (Instant::now(), cpu_time());
    let mut stream = MarkdownStream::new(style.clone(), WIDTH);
    let mut lines = 0;
    for chunk in chunks {
        lines += black_box(stream.push(chunk)).len();
    }
    lines += black_box(stream.finish()).len();
    (wall.elapsed(), cpu_time() - cpu, lines)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let text = answer();
    let chunks = chunks(&text);
    let mib = text.len() as f64 / MIB as f64;
    println!(
        "answer: {} bytes ({mib:.2} MiB), {} chunks of 4-16 bytes, width {WIDTH}, {RUNS} runs",
        text.len(),
        chunks.len()
    );
    let dark = theme::load("dark", Path::new("/nonexistent")).unwrap();
    let styled = RenderStyle::styled(dark);

    // The first code block loads syntect's syntax and theme sets; time that once, apart.
    let start = Instant::now();
    let mut warm = MarkdownStream::new(styled.clone(), WIDTH);
    black_box(warm.push("```rust\nfn main() {}\n```\n"));
    println!(
        "syntect first use (lazy load): {:.1} ms",
        ms(start.elapsed())
    );

    for (name, style) in [("styled", &styled), ("plain", &RenderStyle::Plain)] {
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut lines = 0;
        for _ in 0..RUNS {
            let (wall, cpu, n) = render(style, &chunks);
            walls.push(wall);
            cpus.push(cpu);
            lines = n;
        }
        let (wall, cpu) = (median(walls), median(cpus));
        println!(
            "{name:>6}: wall {:.1} ms/MiB, cpu {:.1} ms/MiB ({:.1} MiB/s), {lines} lines",
            ms(wall) / mib,
            ms(cpu) / mib,
            mib / wall.as_secs_f64(),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
