//! `<think>…</think>` in the answer text. Local reasoning models served by llama.cpp or
//! Ollama without a reasoning parser (Qwen3, DeepSeek-R1 distills) write their reasoning
//! into the content, wrapped in these tags. Only a block that opens the answer is
//! reasoning; a tag later in the prose is text. Tags may be split across chunks at any byte.

use super::StreamEvent;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace yet: the answer may still open with `<think>`.
    #[default]
    Start,
    Thinking,
    /// Right after `</think>`: the blank lines before the answer are dropped.
    AfterThinking,
    Text,
}

/// Turns a stream of answer text into `Thinking` and `Text` events.
#[derive(Debug, Default)]
pub struct ThinkSplitter {
    state: State,
    /// Text held back: a possible opening tag at the start, or a possible closing tag.
    held: String,
}

impl ThinkSplitter {
    pub fn push(&mut self, chunk: &str, emit: &mut impl FnMut(StreamEvent)) {
        self.push_owned(chunk.to_string(), emit);
    }

    /// [`Self::push`] for a piece already owned: a long piece of plain answer text is
    /// passed on as it is, never copied (one event can carry megabytes).
    pub fn push_owned(&mut self, chunk: String, emit: &mut impl FnMut(StreamEvent)) {
        if self.held.is_empty() {
            self.held = chunk;
        } else {
            self.held.push_str(&chunk);
        }
        loop {
            match self.state {
                State::Start => {
                    let rest = self.held.trim_start();
                    if rest.is_empty() || (OPEN.starts_with(rest) && rest.len() < OPEN.len()) {
                        return;
                    }
                    if let Some(after) = rest.strip_prefix(OPEN) {
                        self.held = after.to_string();
                        self.state = State::Thinking;
                    } else {
                        self.state = State::Text;
                    }
                }
                State::Thinking => {
                    if let Some(at) = self.held.find(CLOSE) {
                        let thought = self.held[..at].to_string();
                        self.held.drain(..at + CLOSE.len());
                        send(emit, StreamEvent::Thinking(thought));
                        self.state = State::AfterThinking;
                        continue;
                    }
                    // Everything but what could be the start of `</think>` is reasoning.
                    let keep = partial_suffix(&self.held, CLOSE);
                    let thought: String = self.held.drain(..self.held.len() - keep).collect();
                    send(emit, StreamEvent::Thinking(thought));
                    return;
                }
                State::AfterThinking => {
                    let trimmed = self.held.trim_start().to_string();
                    self.held = trimmed;
                    if self.held.is_empty() {
                        return;
                    }
                    self.state = State::Text;
                }
                State::Text => {
                    let text = std::mem::take(&mut self.held);
                    send(emit, StreamEvent::Text(text));
                    return;
                }
            }
        }
    }

    /// The answer ended: what was held back is given as what it was taken for.
    pub fn finish(&mut self, emit: &mut impl FnMut(StreamEvent)) {
        let held = std::mem::take(&mut self.held);
        match self.state {
            State::Thinking => send(emit, StreamEvent::Thinking(held)),
            State::Start | State::Text => send(emit, StreamEvent::Text(held)),
            State::AfterThinking => {}
        }
        self.state = State::Text;
    }
}

fn send(emit: &mut impl FnMut(StreamEvent), event: StreamEvent) {
    let empty = matches!(&event, StreamEvent::Text(t) | StreamEvent::Thinking(t) if t.is_empty());
    if !empty {
        emit(event);
    }
}

/// How many bytes at the end of `text` could begin `tag` (a tag split across chunks).
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` cut at `at` byte boundaries and joins what came out per kind.
    fn split(text: &str, size: usize) -> (String, String) {
        let mut splitter = ThinkSplitter::default();
        let (mut thinking, mut answer) = (String::new(), String::new());
        let mut emit = |e: StreamEvent| match e {
            StreamEvent::Thinking(t) => thinking.push_str(&t),
            StreamEvent::Text(t) => answer.push_str(&t),
            _ => {}
        };
        let bytes = text.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            let mut end = (start + size).min(bytes.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            splitter.push(&text[start..end], &mut emit);
            start = end;
        }
        splitter.finish(&mut emit);
        (thinking, answer)
    }

    #[test]
    fn a_leading_think_block_is_reasoning_at_every_split() {
        let text = "<think>\nLet me see: 2+2.\n</think>\n\nIt is **4**.";
        for size in 1..=text.len() {
            let (thinking, answer) = split(text, size);
            assert_eq!(thinking.trim(), "Let me see: 2+2.", "size {size}");
            assert_eq!(answer, "It is **4**.", "size {size}");
        }
    }

    #[test]
    fn a_tag_later_in_the_text_is_text() {
        for size in [1, 3, 100] {
            let (thinking, answer) = split("Use the <think> tag like this: <think>x</think>", size);
            assert!(thinking.is_empty());
            assert_eq!(answer, "Use the <think> tag like this: <think>x</think>");
        }
    }

    #[test]
    fn plain_answers_and_unclosed_thinking_come_through() {
        assert_eq!(split("  hello", 2), (String::new(), "  hello".to_string()));
        assert_eq!(split("<thi", 1), (String::new(), "<thi".to_string()));
        assert_eq!(split("<think>still going", 4).0, "still going");
    }
}
