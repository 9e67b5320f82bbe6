'use strict';
// linggen's web mirror: renders one session's event stream (doc/events.md) the way the
// terminal does, and sends messages, approval answers and cancels back (doc/web.md).
// No framework and no build step: the binary embeds this file as it is. Model text only
// reaches innerHTML through `esc` (the markdown renderer escapes every piece it emits).

/* ---------- small helpers ---------- */

const $ = (sel, root = document) => root.querySelector(sel);

/** An element whose `text` is set as text, never parsed as HTML. */
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text != null) node.textContent = text;
  return node;
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

/** First line of `text`, cut to `max` characters (as the terminal's one-line summaries). */
function oneLine(text, max = 100) {
  const first = String(text || '').trim().split('\n')[0];
  return first.length > max ? first.slice(0, max) + '…' : first;
}

/** 12345 -> "12.3k": header-sized token counts. */
function kilo(n) {
  return n >= 1000 ? (n / 1000).toFixed(n >= 10000 ? 0 : 1) + 'k' : String(n);
}

/* ---------- markdown ---------- */
// A compact CommonMark subset: enough for model answers, and streaming-safe (an unclosed
// fence renders as code until it closes). It emits HTML strings in which every piece of
// source text went through `esc`, and links only to http(s).

const FENCE_RE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/;
const HEADING_RE = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const HR_RE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE_RE = /^ {0,3}> ?/;
const LIST_RE = /^( *)([-*+]|\d{1,9}[.)])( +|$)(.*)$/;
const TABLE_SEP_RE = /^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$/;

function renderMarkdown(src) {
  const text = String(src).replace(/\r\n?/g, '\n').replace(/\0/g, '').replace(/\t/g, '    ');
  return blocks(text.split('\n'));
}

/** Does this line open a block that ends a running paragraph? */
function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE_RE.test(line) || HEADING_RE.test(line) || HR_RE.test(line) ||
    QUOTE_RE.test(line) || LIST_RE.test(line) || isTable(lines, i);
}

function blocks(lines) {
  let out = '';
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      i++;
    } else if ((m = FENCE_RE.exec(line))) {
      const body = [];
      const close = new RegExp('^ {0,3}' + m[1][0] + '{' + m[1].length + ',}\\s*$');
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      i++;
      out += codeBlock(body.join('\n'), m[2]);
    } else if ((m = HEADING_RE.exec(line))) {
      const n = m[1].length;
      out += `<h${n}>${inline(m[2])}</h${n}>`;
      i++;
    } else if (HR_RE.test(line)) {
      out += '<hr>';
      i++;
    } else if (QUOTE_RE.test(line)) {
      const inner = [];
      for (; i < lines.length && QUOTE_RE.test(lines[i]); i++) inner.push(lines[i].replace(QUOTE_RE, ''));
      out += `<blockquote>${blocks(inner)}</blockquote>`;
    } else if (isTable(lines, i)) {
      i = table(lines, i, (html) => (out += html));
    } else if (LIST_RE.test(line)) {
      i = list(lines, i, (html) => (out += html));
    } else {
      const para = [line];
      for (i++; i < lines.length && lines[i].trim() && !startsBlock(lines, i); i++) para.push(lines[i]);
      out += `<p>${inline(para.map((l) => l.trim()).join('\n'))}</p>`;
    }
  }
  return out;
}

function isTable(lines, i) {
  return lines[i].includes('|') && i + 1 < lines.length &&
    lines[i + 1].includes('-') && TABLE_SEP_RE.test(lines[i + 1]);
}

/** Cells of a table row; `\|` and a pipe inside a code span are literal. */
function cells(line) {
  const row = line.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '');
  const out = [''];
  let code = false;
  for (let k = 0; k < row.length; k++) {
    const c = row[k];
    if (c === '\\' && row[k + 1] === '|') out[out.length - 1] += row[++k];
    else if (c === '|' && !code) out.push('');
    else {
      if (c === '`') code = !code;
      out[out.length - 1] += c;
    }
  }
  return out.map((c) => c.trim());
}

function table(lines, i, emit) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) =>
    c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : c.startsWith(':') ? 'left' : '');
  const row = (cs, tag) => '<tr>' + head.map((_, k) =>
    `<${tag}${align[k] ? ` class="al-${align[k]}"` : ''}>${inline(cs[k] || '')}</${tag}>`).join('') + '</tr>';
  let html = `<div class="table"><table><thead>${row(head, 'th')}</thead><tbody>`;
  for (i += 2; i < lines.length && lines[i].includes('|') && lines[i].trim(); i++) html += row(cells(lines[i]), 'td');
  emit(html + '</tbody></table></div>');
  return i;
}

const indentOf = (line) => line.length - line.trimStart().length;

/** A list starting at `lines[i]`; items keep their nested blocks (lists, code, quotes). */
function list(lines, i, emit) {
  const first = LIST_RE.exec(lines[i]);
  const base = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  while (i < lines.length) {
    const line = lines[i];
    const m = LIST_RE.exec(line);
    if (m && m[1].length <= base + 1 && /\d/.test(m[2]) === ordered) {
      items.push({ lines: [m[4]], pad: m[1].length + m[2].length + Math.max(1, m[3].length) });
      i++;
      continue;
    }
    const item = items[items.length - 1];
    if (!line.trim()) {
      // A blank line continues the item only when indented content follows it.
      let j = i + 1;
      while (j < lines.length && !lines[j].trim()) j++;
      if (j >= lines.length) break;
      const next = LIST_RE.exec(lines[j]);
      if (next && next[1].length <= base + 1 && /\d/.test(next[2]) === ordered) {
        i = j; // a loose list: the next item follows after blank lines
        continue;
      }
      if (indentOf(lines[j]) <= base) break;
      item.lines.push('');
    } else if (indentOf(line) > base) {
      item.lines.push(line.replace(new RegExp(`^ {0,${item.pad}}`), ''));
    } else if (!startsBlock(lines, i) && item.lines[item.lines.length - 1] !== '') {
      item.lines.push(line); // a lazy continuation of the item's paragraph
    } else {
      break;
    }
    i++;
  }
  const tag = ordered ? 'ol' : 'ul';
  const start = ordered && parseInt(first[2], 10) !== 1 ? ` start="${parseInt(first[2], 10)}"` : '';
  let html = `<${tag}${start}>`;
  for (const item of items) {
    const task = /^\[([ xX])\]\s+/.exec(item.lines[0]);
    if (task) item.lines[0] = item.lines[0].slice(task[0].length);
    const box = task ? `<span class="task">${task[1] === ' ' ? '☐' : '☑'}</span> ` : '';
    // A tight item (no blank line) shows its text without paragraph spacing.
    const body = blocks(item.lines);
    html += `<li>${box}${item.lines.includes('') ? body : body.replace(/^<p>([\s\S]*?)<\/p>/, '$1')}</li>`;
  }
  emit(html + `</${tag}>`);
  return i;
}

/**
 * Inline markdown. Code spans, backslash escapes and links are cut out of the raw text
 * first into numbered slots (so their text is not read as emphasis, and a URL ends where
 * its raw text does, not inside an entity), the rest is escaped, then emphasis is applied
 * to the escaped text, and the slots are put back.
 */
function inline(src) {
  const slots = [];
  const keep = (html) => `\0${slots.push(html) - 1}\0`;
  let s = String(src).replace(/\0/g, '');
  // One pass, so a backslash inside a code span stays and an escaped backtick opens none.
  s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\\([!-/:-@[-`{-~])|\\(?=\n)/g, (_, ticks, code, escaped) =>
    ticks ? keep(`<code>${esc(code.replace(/^ (.*) $/s, '$1'))}</code>`) : escaped ? keep(esc(escaped)) : '');
  s = s.replace(/\[([^\]]+)\]\(\s*((?:[^\s()]|\([^\s()]*\))+)(?:\s+"[^)]*")?\s*\)/g, (_, label, url) =>
    /^https?:\/\//i.test(url) ? keep(link(url, emphasis(esc(label)))) : emphasis(esc(label)));
  s = s.replace(/<(https?:\/\/[^\s<>\0]+)>/gi, (_, url) => keep(link(url, esc(url))));
  s = s.replace(/(^|[\s(["'*_~])(https?:\/\/[^\s<>"'`\0]*[^\s<>"'`\0.,;:!?)*_~])/gi, (_, pre, url) =>
    pre + keep(link(url, esc(url))));
  s = emphasis(esc(s)).replace(/\n/g, '<br>');
  const restore = (t) => t.replace(/\0(\d+)\0/g, (_, k) => restore(slots[k]));
  return restore(s);
}

/** `url` is raw text already checked to be http(s); escaped, it cannot leave the attribute. */
function link(url, labelHtml) {
  return `<a href="${esc(url)}" target="_blank" rel="noopener noreferrer">${labelHtml}</a>`;
}

function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/(^|[^\w*])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![\w*])/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?!\w)/g, '$1<em>$2</em>')
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, '<del>$1</del>');
}

/* ---------- syntax highlighting ---------- */
// One regex per language with alternatives for comments, strings, special tokens, numbers
// and words; words are then told apart (keyword, literal, type, call). Small on purpose:
// it colours what a reader scans for, not a full grammar.

const C_COMMENT = String.raw`\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)`;
const HASH_COMMENT = String.raw`(?:^|(?<=\s))#[^\n]*`;
const DQ = String.raw`"(?:\\[\s\S]|[^"\\\n])*"`;
const SQ = String.raw`'(?:\\[\s\S]|[^'\\\n])*'`;
const NUMBER = String.raw`\b(?:0[xXoObB][\da-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)[a-zA-Z\d]*\b`;

const LANGS = {
  rust: {
    kw: 'as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while',
    lit: 'true false None Some Ok Err',
    comment: C_COMMENT,
    string: String.raw`r#*"[\s\S]*?"#*|b?"(?:\\[\s\S]|[^"\\])*"|b?'(?:\\.|[^'\\])'`,
    extra: [[String.raw`#!?\[[^\]\n]*\]`, 'm'], [String.raw`'[a-z_]\w*\b`, 'm'], [String.raw`\b[a-z_]\w*!(?=[(\[{])`, 'f']],
  },
  js: {
    kw: 'async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield interface type enum implements private protected public readonly as declare namespace abstract keyof',
    lit: 'true false null undefined NaN Infinity',
    comment: C_COMMENT,
    string: `${DQ}|${SQ}|` + '`(?:\\\\[\\s\\S]|[^`\\\\])*`',
  },
  python: {
    kw: 'and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self',
    lit: 'True False None',
    comment: HASH_COMMENT,
    string: String.raw`[rbfuRBFU]{0,2}(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|` + `${DQ}|${SQ})`,
    extra: [[String.raw`@[\w.]+`, 'm']],
  },
  sh: {
    kw: 'if then else elif fi for while until do done case esac in function return local export readonly unset shift exit break continue source alias',
    lit: 'true false',
    comment: HASH_COMMENT,
    string: String.raw`"(?:\\[\s\S]|[^"\\])*"|'[^']*'`,
    extra: [[String.raw`\$\{[^}\n]*\}|\$[\w@#?$!*-]`, 'v'], [String.raw`(?:^|(?<=\s))--?[\w-]+`, 'm']],
    noCalls: true,
  },
  json: { kw: '', lit: 'true false null', comment: C_COMMENT, string: DQ, keys: true },
  toml: {
    kw: '', lit: 'true false inf nan', comment: HASH_COMMENT,
    string: String.raw`"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|` + `${DQ}|${SQ}`,
    extra: [[String.raw`^[ \t]*\[\[?[^\]\n]*\]\]?`, 'm'], [String.raw`^[ \t]*[\w.-]+(?=[ \t]*=)`, 'kk']],
  },
  yaml: {
    kw: '', lit: 'true false null yes no', comment: HASH_COMMENT, string: `${DQ}|${SQ}`,
    extra: [[String.raw`^[ \t]*(?:- )?[\w.-]+(?=:(?:\s|$))`, 'kk']], noCalls: true,
  },
  go: {
    kw: 'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var',
    lit: 'true false nil iota', comment: C_COMMENT, string: `${DQ}|${SQ}|` + '`[^`]*`',
  },
  c: {
    kw: 'auto break case catch char class const constexpr continue default delete do double else enum extern final float for friend goto if inline int long namespace new operator private protected public return short signed sizeof static struct switch template this throw try typedef typename union unsigned using virtual void volatile while boolean extends implements import package super',
    lit: 'true false NULL nullptr null', comment: C_COMMENT, string: `${DQ}|${SQ}`,
    extra: [[String.raw`^[ \t]*#[a-z]+`, 'm']],
  },
};
const LANG_ALIASES = {
  rs: 'rust', javascript: 'js', jsx: 'js', ts: 'js', typescript: 'js', tsx: 'js', mjs: 'js',
  py: 'python', bash: 'sh', shell: 'sh', zsh: 'sh', console: 'sh', shellsession: 'sh',
  jsonc: 'json', json5: 'json', yml: 'yaml', golang: 'go', cpp: 'c', 'c++': 'c', h: 'c',
  hpp: 'c', java: 'c', cs: 'c', csharp: 'c', patch: 'diff',
};
const compiled = new Map();

function grammar(name) {
  if (!compiled.has(name)) {
    const spec = LANGS[name];
    const parts = [[spec.comment, 'c'], [spec.string, 's'], ...(spec.extra || []), [NUMBER, 'n'], [String.raw`[A-Za-z_$][\w$]*`, 'w']];
    compiled.set(name, {
      re: new RegExp(parts.map(([src]) => `(${src})`).join('|'), 'gm'),
      classes: parts.map(([, cls]) => cls),
      kw: new Set(spec.kw.split(' ')),
      lit: new Set(spec.lit.split(' ')),
      keys: spec.keys,
      calls: !spec.noCalls,
    });
  }
  return compiled.get(name);
}

/** Highlighted HTML for `code` in `lang`; unknown languages come back escaped only. */
function highlight(code, lang) {
  const name = LANG_ALIASES[lang] || lang;
  if (name === 'diff') return diffHtml(code);
  if (!LANGS[name]) return esc(code);
  const g = grammar(name);
  let out = '';
  let last = 0;
  for (const m of code.matchAll(g.re)) {
    const k = m.findIndex((part, idx) => idx > 0 && part !== undefined);
    const tok = m[0];
    let cls = g.classes[k - 1];
    const end = m.index + tok.length;
    if (cls === 'w') {
      cls = g.kw.has(tok) ? 'k' : g.lit.has(tok) ? 'l' : /^[A-Z][a-z]/.test(tok) ? 't'
        : g.calls && code[end] === '(' ? 'f' : '';
    } else if (cls === 's' && g.keys && /^\s*:/.test(code.slice(end, end + 20))) {
      cls = 'kk';
    }
    out += esc(code.slice(last, m.index)) + (cls ? `<span class="tk-${cls}">${esc(tok)}</span>` : esc(tok));
    last = end;
  }
  return out + esc(code.slice(last));
}

/** A unified diff as coloured lines (`+` added, `-` removed, `@@` hunk headers). */
function diffHtml(diff, maxLines = Infinity) {
  const lines = String(diff).replace(/\n$/, '').split('\n');
  const shown = lines.slice(0, maxLines).map((line) => {
    const cls = /^(\+\+\+|---|diff |index )/.test(line) ? 'meta'
      : line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : line.startsWith('@@') ? 'hunk' : 'ctx';
    return `<span class="dl-${cls}">${esc(line)}\n</span>`;
  });
  if (lines.length > maxLines) shown.push(`<span class="dl-meta">… ${lines.length - maxLines} more lines\n</span>`);
  return shown.join('');
}

function codeBlock(code, lang) {
  const label = lang ? `<span>${esc(lang)}</span>` : '<span></span>';
  return `<div class="code"><div class="code-head">${label}<button type="button" class="copy">copy</button></div>` +
    `<pre><code>${highlight(code, lang.toLowerCase().split(/[,{]/)[0])}</code></pre></div>`;
}

/* ---------- state ---------- */

const S = {
  pendingImages: [], // pasted or dropped, sent with the next message
  seq: 0, // id of the last event rendered
  gen: 0, // bumped by every (re)load so answers of an older one are dropped
  es: null,
  retry: 0, // timer of a pending reload after the stream was lost
  backoff: 1000,
  attempts: 0, // reloads tried since the stream was last open (bounded, see RETRY_LIMIT)
  streamErrors: 0, // errors of the current EventSource since it last opened
  selected: null, // session picked in the sidebar (`linggen serve`); null = the shared one
  sessionId: null,
  readOnly: false,
  /** Background commands by id, as their last `TaskUpdated` left them. */
  tasks: new Map(),
  canOpen: false,
  stick: true, // keep the transcript scrolled to the bottom
  runs: new Map(), // run_id -> {parent, agent, model}
  lastModel: null, // the model the last call went to (a line shows when it changes)
  streams: new Map(), // run_id -> {answer, think}: responses being streamed
  finished: new Map(), // run_id -> answer bubble ended by `done`, waiting for its Message
  tools: new Map(), // run_id + call_id -> tool block
  approvals: new Map(), // approval id -> card
  delegations: new Map(), // run_id -> {summary, spawned}: delegate calls shown via the child
  answered: new Set(), // top-level runs whose answer text was shown
  activity: new Map(), // run_id -> what that run is doing (last updated shown)
  errors: new Set(), // `Error` messages shown this turn (its error Outcome repeats one)
  busy: false,
  breakdown: null, // what the last request was made of (the context meter's tooltip)
  resumedChanges: new Map(), // run_id -> files a resumed run's calls wrote (no ChangeReport)
  settings: null, // the session's settings as last shown (a change line names what changed)
};

const DELEGATE_TOOL = 'delegate_to_agent';

const SETTING_NAMES = [['agent_id', 'agent'], ['mode', 'mode'], ['model', 'model'], ['permission_mode', 'permission mode'], ['max_iters', 'max_iters']];

/** `mode → talk`: what a `SettingsUpdated` changed (every setting when none were known). */
function settingsChanged(before, after) {
  return SETTING_NAMES
    .filter(([key]) => !before || before[key] === undefined || before[key] !== after[key])
    .map(([key, name]) => (before && before[key] !== undefined ? `${name} → ${after[key]}` : `${name} ${after[key]}`))
    .join(' · ');
}

function resetView() {
  for (const key of ['runs', 'streams', 'finished', 'tools', 'approvals', 'delegations', 'answered', 'activity', 'errors']) S[key].clear();
  S.lastModel = null;
  S.breakdown = null;
  dirtyParts.clear();
  S.resumedChanges.clear();
  $('#transcript').replaceChildren();
  resetTabs();
}

/** How deep a run is nested under delegations (0 = the turn's own agent). */
function depth(runId) {
  let d = 0;
  for (let r = S.runs.get(runId); r && r.parent && d < 16; r = S.runs.get(r.parent)) d++;
  return d;
}

function rootOf(runId) {
  let id = runId;
  for (let n = 0; S.runs.get(id)?.parent && n < 16; n++) id = S.runs.get(id).parent;
  return id;
}

/** Appends a transcript node, indented as deep as its run. */
function add(node, runId) {
  const d = runId ? depth(runId) : 0;
  if (d) node.dataset.depth = String(Math.min(d, 4));
  $('#transcript').append(node);
  grew();
  return node;
}

/* ---------- event handlers ---------- */

const HANDLERS = {
  SessionStarted(ev) {
    S.sessionId = ev.session_id;
    setHeader({ model: ev.model, agent_id: ev.agent_id, root: ev.root, permission_mode: ev.permission_mode });
    sessionsChanged();
  },
  SettingsUpdated(ev) {
    setHeader({ agent_id: ev.agent_id, mode: ev.mode, model: ev.model, permission_mode: ev.permission_mode });
    const changed = settingsChanged(S.settings, ev);
    S.settings = ev;
    if (changed) add(el('div', 'line hint', changed));
  },
  StateUpdated(ev) {
    setHeader({ agent_id: ev.agent_id, mode: ev.mode });
    setBusy(ev.status === 'running');
  },
  RunStarted(ev) {
    S.runs.set(ev.run_id, { parent: ev.parent_id || null, agent: ev.agent_id });
    if (!ev.parent_id) S.answered.delete(ev.run_id);
  },
  Message: onMessage,
  Token: onToken,
  ToolCallStarted(ev) {
    const planned = S.tools.get(toolKey(ev.run_id, ev.call_id));
    if (ev.tool === DELEGATE_TOOL) {
      // Shown as the child run's own line once it starts (as the terminal does).
      S.delegations.set(ev.run_id, { summary: ev.summary, spawned: false });
    }
    if (planned?.classList.contains('planned')) {
      planned.classList.remove('planned');
      planned.dataset.summary = ev.summary;
      planned.firstChild.replaceWith(toolLine(ev.summary));
    } else if (ev.tool !== DELEGATE_TOOL) {
      toolBlock(ev.call_id, ev.run_id, ev.summary, ev.tool);
    }
  },
  ToolCallFinished: onToolFinished,
  SubagentSpawned(ev) {
    S.runs.set(ev.subagent_id, { parent: ev.parent_id, agent: ev.agent_id });
    const delegation = S.delegations.get(ev.parent_id);
    if (delegation) delegation.spawned = true;
    // The child's own lines tell the story; the planned `delegate_to_agent` line goes.
    for (const [key, block] of S.tools) {
      if (block.dataset.run === ev.parent_id && block.dataset.tool === DELEGATE_TOOL && block.classList.contains('open')) {
        block.remove();
        S.tools.delete(key);
      }
    }
    const block = add(el('div', 'tool subagent'), ev.parent_id);
    block.append(toolLine(`${ev.agent_id}${ev.background ? ' (background)' : ''} ← ${oneLine(ev.task)}`));
    block.firstChild.append(' ', tabLink(ev.agent_id));
    block.title = ev.task;
  },
  SubagentResult(ev) {
    const status = { completed: 'completed', cancelled: 'cancelled' }[ev.outcome] || 'failed';
    const first = oneLine(ev.result);
    const block = add(el('div', 'tool subagent-result'), ev.parent_id);
    block.append(resultLine(first ? `${ev.agent_id} ${status}: ${first}` : `${ev.agent_id} ${status}`, ev.outcome === 'completed'));
    if (ev.result && ev.result.trim() !== first) block.append(collapsible('full result', ev.result, true));
  },
  ApprovalRequested: onApprovalRequested,
  ApprovalResolved: onApprovalResolved,
  ContextUsage(ev) {
    if (depth(ev.run_id) === 0) setContext(ev);
  },
  AgentStatus(ev) {
    S.activity.delete(ev.run_id);
    if (ev.status !== 'idle') S.activity.set(ev.run_id, activityText(ev));
    showActivity();
  },
  ChangeReport(ev) {
    if (!ev.files || !ev.files.length) return;
    const line = add(el('div', 'line changes', '✎ changed: '), ev.run_id);
    ev.files.forEach((f, k) => line.append(k ? ', ' : '', el('code', null, f)));
    if (ev.truncated_count) line.append(` and ${ev.truncated_count} more`);
    line.append(' · ', auditLink(ev.run_id));
  },
  QueueUpdated(ev) {
    setQueue(ev.queued || []);
  },
  TodosUpdated(ev) {
    setTodos(ev.todos || []);
  },
  TaskUpdated(ev) {
    if (!ev.task) return;
    S.tasks.set(ev.task.id, ev.task);
    drawTasks();
  },
  Outcome: onOutcome,
  Error(ev) {
    S.errors.add(String(ev.message || '').trim());
    add(el('div', 'line error', `✗ ${ev.message}`));
  },
  Warning(ev) {
    add(el('div', 'line warn', `⚠ ${ev.message}`));
  },
  /** Work that ran without anyone (a schedule, the heartbeat), as `linggen serve` tells it. */
  Notification(ev) {
    add(el('div', 'line hint notification', `⏰ ${ev.message}`));
  },
  /** A call that failed in a way that may pass, tried again after a wait (a dim line). */
  Retrying(ev) {
    const secs = (Number(ev.delay_ms) / 1000).toFixed(1);
    add(el('div', 'line hint', `↻ ${ev.model_id}: ${ev.reason} · retrying in ${secs} s (attempt ${ev.attempt} of ${ev.max_attempts})`), ev.run_id);
  },
  Compacted(ev) {
    add(el('div', 'line hint', `⎿ compacted: ${ev.before_tokens} → ${ev.after_tokens} tokens (older messages summarised)`), ev.run_id);
  },
  /** Which model serves the run's calls: a line when it changes, as in the terminal. */
  ModelRouted(ev) {
    const run = S.runs.get(ev.run_id);
    if (run) run.model = ev.model_id;
    const changed = S.lastModel ? S.lastModel !== ev.model_id : !['pinned', 'default'].includes(ev.policy);
    S.lastModel = ev.model_id;
    if (changed) add(el('div', 'line hint', `↳ model ${ev.model_id} · ${ev.reason}`), ev.run_id);
  },
};

// Events the page draws nothing for (tests/web_browser.rs fails on a type in neither this
// list nor HANDLERS): checkpoints show as the turn's change report, hooks in the audit trail.
const UNSHOWN_EVENTS = ['CheckpointCreated', 'CheckpointClosed', 'HookRan'];

/** Who answers in a run: its agent, and the model that served it once one did. */
function speaker(runId, fallback) {
  const run = S.runs.get(runId);
  const agent = run?.agent || fallback;
  return run?.model && agent ? `${agent} · ${run.model}` : agent;
}

function apply(ev) {
  const handler = ev && HANDLERS[ev.type];
  if (handler) handler(ev);
  tabsApply(ev);
}

function activityText(ev) {
  const who = ev.agent_id || 'agent';
  switch (ev.status) {
    case 'thinking': return ev.detail ? `${who}: ${ev.detail}…` : `${who} thinking…`;
    case 'running_tool': return `${who}: ${ev.detail || 'running a tool'}`;
    // A viewer cannot answer; someone else (in the terminal or a full browser) must.
    case 'waiting_approval': return S.readOnly ? `${who} is waiting for the person's approval` : `${who} is waiting for your approval`;
    default: return `${who}: ${ev.status}${ev.detail ? ' · ' + ev.detail : ''}`;
  }
}

/* ----- messages and streaming ----- */

function bubble(role, from, runId, streaming) {
  const node = el('div', `msg ${role}${streaming ? ' streaming' : ''}`);
  if (from) node.append(el('div', 'from', from));
  node.append(el('div', 'md'));
  return add(node, runId);
}

function onMessage(ev) {
  const d = depth(ev.run_id);
  if (ev.role === 'user') {
    // A delegated run's task was already shown as `agent ← task`.
    // An auto-mode observation: the tool call above already shows it.
    if (d === 0 && ev.from !== 'observation') {
      flushResumedChanges();
      const node = bubble('user', ev.from, ev.run_id);
      $('.md', node).textContent = ev.content;
      if ((ev.images || []).length) node.append(imageChips(ev.images));
    }
  } else if (ev.role === 'assistant') {
    onAssistantMessage(ev, d);
  } else if (ev.role === 'tool') {
    onToolMessage(ev);
  }
}

/** What a message's images are (the events carry their type and size, not their data). */
function imageChips(images) {
  const row = document.createElement('div');
  row.className = 'images';
  for (const image of images) {
    const chip = document.createElement('span');
    chip.className = 'image-chip';
    const kb = Math.max(1, Math.ceil((image.bytes || 0) / 1024));
    const label = `🖼 ${image.media_type} · ${kb} KB`;
    chip.textContent = label;
    if (image.id) chip.prepend(thumbnail(image.id, label));
    row.append(chip);
  }
  return row;
}

/** The image itself, fetched once shown: events name images, they do not carry them. */
const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;
function thumbnail(id, label) {
  const img = document.createElement('img');
  img.className = 'image-thumb';
  img.alt = label;
  img.hidden = true;
  getJSON(`/api/image?id=${encodeURIComponent(id)}${sessionQuery('&')}`)
    .then((got) => {
      if (!got || !IMAGE_TYPES.test(got.media_type)) return;
      img.src = `data:${got.media_type};base64,${got.data}`;
      img.hidden = false;
    })
    .catch(() => { /* the label stays: the image is no longer held (a resumed session) */ });
  return img;
}

/** The final text replaces the streamed one; a tool-calls-only answer leaves no bubble. */
function onAssistantMessage(ev, d) {
  const live = S.streams.get(ev.run_id);
  if (live) endStream(ev.run_id);
  const target = S.finished.get(ev.run_id);
  S.finished.delete(ev.run_id);
  const text = ev.content || '';
  if (text.trim()) {
    const node = target || bubble('assistant', speaker(ev.run_id, ev.from), ev.run_id);
    node.classList.remove('streaming');
    $('.md', node).innerHTML = renderMarkdown(text);
    if (d === 0) S.answered.add(ev.run_id);
  } else {
    target?.remove();
  }
  for (const call of ev.tool_calls || []) plannedCall(ev.run_id, call);
  grew();
}

function onToken(ev) {
  let stream = S.streams.get(ev.run_id);
  if (ev.token) {
    if (!stream) S.streams.set(ev.run_id, (stream = { answer: null, think: null }));
    const key = ev.thinking ? 'think' : 'answer';
    // No bubble for leading whitespace (a response that turns out to be tool calls only).
    if (!stream[key] && (ev.thinking || ev.token.trim())) {
      stream[key] = ev.thinking ? thinkingPart(ev.run_id) : answerPart(ev);
    }
    if (stream[key]) {
      stream[key].text += ev.token;
      markDirty(stream[key]);
      if (!ev.thinking) answering(ev);
    }
  }
  if (ev.done) endStream(ev.run_id);
}

/** The answer's text is arriving: the run is no longer "thinking". */
function answering(ev) {
  if (depth(ev.run_id) === 0) S.answered.add(ev.run_id);
  const text = `${S.runs.get(ev.run_id)?.agent || ev.agent_id || 'agent'} is answering…`;
  if (S.activity.get(ev.run_id) === text) return;
  S.activity.set(ev.run_id, text);
  showActivity();
}

function answerPart(ev) {
  const node = bubble('assistant', speaker(ev.run_id, ev.agent_id), ev.run_id, true);
  return { kind: 'answer', node, body: $('.md', node), text: '' };
}

function thinkingPart(runId) {
  const node = add(el('details', 'thinking'), runId);
  node.open = true;
  node.append(el('summary', null, 'thinking…'));
  const body = node.appendChild(el('div', 'think-text'));
  return { kind: 'think', node, body, text: '' };
}

/** A response ended (`done`): render it in full; its Message may still replace the text. */
function endStream(runId) {
  const stream = S.streams.get(runId);
  if (!stream) return;
  S.streams.delete(runId);
  for (const part of [stream.think, stream.answer]) if (part) renderPart(part);
  if (stream.think) {
    stream.think.node.open = false;
    stream.think.node.firstChild.textContent = 'thought';
  }
  if (stream.answer) {
    stream.answer.node.classList.remove('streaming');
    S.finished.set(runId, stream.answer.node);
  }
  grew();
}

// Streaming text is re-rendered at most every 50 ms, not per token; a very long answer
// (whose every render re-parses all of it) less often.
const dirtyParts = new Set();
let flushTimer = 0;

function markDirty(part) {
  dirtyParts.add(part);
  if (!flushTimer) flushTimer = setTimeout(flushStreams, part.text.length > 40000 ? 250 : 50);
}

function flushStreams() {
  clearTimeout(flushTimer);
  flushTimer = 0;
  for (const part of dirtyParts) renderPart(part);
  dirtyParts.clear();
  grew();
}

function renderPart(part) {
  dirtyParts.delete(part);
  if (part.kind === 'think') part.body.textContent = part.text;
  else part.body.innerHTML = renderMarkdown(part.text);
}

/* ----- tool calls ----- */

// The terminal's markers stay in the text (copying gives the same lines), but CSS draws
// them: few fonts have ⏺ and ⎿, and a missing glyph would show as a box.
const MARKERS = { call: '⏺ ', result: '⎿ ', ask: '⏵ ' };
const marker = (kind) => el('span', `marker m-${kind}`, MARKERS[kind]);

/** `⏺ Read src/main.rs`: the first word (the tool or agent) in bold, as in the terminal. */
function toolLine(summary) {
  const line = el('div', 'tool-line');
  const cut = summary.indexOf(' ');
  line.append(marker('call'), el('b', null, cut < 0 ? summary : summary.slice(0, cut)));
  if (cut >= 0) line.append(summary.slice(cut));
  return line;
}

function resultLine(summary, ok) {
  const line = el('div', ok ? 'result-line' : 'result-line err');
  line.append(marker('result'), `${ok ? '' : '✗ '}${summary}`);
  return line;
}

function diffBlock(diff) {
  const pre = el('pre', 'diff');
  pre.innerHTML = diffHtml(diff, 400);
  return pre;
}

/** A `<details>` holding plain text (tool output, a delegated run's full result). */
function collapsible(label, text, plain) {
  const details = el('details', 'collapsible');
  const lines = text.replace(/\n$/, '').split('\n').length;
  details.append(el('summary', null, `${label} (${lines} line${lines === 1 ? '' : 's'})`));
  const body = plain ? el('pre', 'output', text.length > 50000 ? text.slice(0, 50000) + '\n… (cut)' : text) : el('div', 'md');
  details.append(body);
  return details;
}

/** Providers may reuse call ids across turns and runs, so blocks are keyed by both. */
const toolKey = (runId, callId) => `${runId}\n${callId}`;

function toolBlock(callId, runId, summary, tool) {
  const block = add(el('div', 'tool open'), runId);
  block.dataset.call = callId;
  block.dataset.run = runId;
  block.dataset.tool = tool || '';
  block.dataset.summary = summary;
  block.append(toolLine(summary));
  S.tools.set(toolKey(runId, callId), block);
  return block;
}

/**
 * A call the assistant message announced. Live, its `ToolCallStarted` follows at once and
 * puts the server's summary in; a resumed history has only messages, so the line stays.
 */
function plannedCall(runId, call) {
  if (!call || !call.id || S.tools.has(toolKey(runId, call.id))) return;
  const block = toolBlock(call.id, runId, callSummary(call), call.name);
  block.classList.add('planned');
  const path = writtenPath(call);
  if (path) block.dataset.path = path;
}

/** The file a `Write` or `Edit` call names, if any. */
function writtenPath(call) {
  const keys = WRITES[call.name];
  if (!keys) return null;
  let args = call.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return null;
    }
  }
  return keys.map((k) => args && args[k]).find((v) => typeof v === 'string') || null;
}

/** A one-line summary from a call's arguments: the tool and its main argument. */
function callSummary(call) {
  let args = call.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch { /* shown as it is */ }
  }
  if (!args || typeof args !== 'object') return `${call.name} ${oneLine(args ?? '', 100)}`.trim();
  if (call.name === DELEGATE_TOOL) {
    return `delegate to ${args.agent || args.target_agent_id || '?'}: ${oneLine(args.task || args.prompt || '', 100)}`;
  }
  const main = ['file_path', 'path', 'command', 'pattern', 'query', 'url', 'skill', 'name']
    .map((k) => args[k]).find((v) => typeof v === 'string') ??
    (Array.isArray(args.globs) ? args.globs.join(' ') : null);
  const json = JSON.stringify(args);
  return main != null ? `${call.name} ${oneLine(main, 100)}` : json === '{}' ? call.name : `${call.name} ${oneLine(json, 100)}`;
}

function onToolFinished(ev) {
  let block = S.tools.get(toolKey(ev.run_id, ev.call_id));
  if (ev.tool === DELEGATE_TOOL) {
    const delegation = S.delegations.get(ev.run_id);
    S.delegations.delete(ev.run_id);
    if (delegation?.spawned) return; // the child's own lines told the story
    if (!block) block = toolBlock(ev.call_id, ev.run_id, delegation?.summary || ev.tool);
  }
  if (!block) block = toolBlock(ev.call_id, ev.run_id, ev.tool);
  block.classList.remove('open');
  block.classList.add(ev.ok ? 'ok' : 'failed');
  block.append(resultLine(ev.summary, ev.ok));
  if (ev.diff) block.append(diffBlock(ev.diff));
  grew();
}

/** A tool's output duplicates its summary line, so it is folded away under the call. */
function onToolMessage(ev) {
  if (!ev.content) return;
  const block = S.tools.get(toolKey(ev.run_id, ev.tool_call_id));
  if (!block && ev.tool_name === DELEGATE_TOOL) return; // shown as the SubagentResult
  if (block?.classList.contains('planned') && block.classList.contains('open')) resumedResult(block, ev);
  const details = collapsible('output', ev.content, true);
  if (ev.is_error) details.classList.add('err');
  if (block) block.append(details);
  else add(details, ev.run_id);
  grew();
}

/** A one-line result for a call whose summary was not recorded (a resumed session's). */
function resultSummary(content) {
  const text = String(content || '').replace(/\n$/, '');
  const lines = text ? text.split('\n').length : 0;
  return lines === 1 ? oneLine(text, 100) : `${lines} lines of output`;
}

// The tools whose successful call wrote the file named by one of these arguments.
const WRITES = { Write: ['file_path', 'path'], Edit: ['file_path', 'path'] };

/**
 * A resumed call's result: the history has the call and its output, not the events, so the
 * block gets its result line here, and the files it wrote a `✎ changed:` line at the end
 * of the turn, as live calls get them.
 */
function resumedResult(block, ev) {
  block.classList.remove('open', 'planned');
  block.classList.add(ev.is_error ? 'failed' : 'ok');
  block.append(resultLine(resultSummary(ev.content), !ev.is_error));
  const keys = WRITES[block.dataset.tool];
  const path = keys && block.dataset.path;
  if (ev.is_error || !path) return;
  if (!S.resumedChanges.has(ev.run_id)) S.resumedChanges.set(ev.run_id, new Set());
  S.resumedChanges.get(ev.run_id).add(path);
}

/** The `✎ changed:` lines of the resumed turns so far (before the next one, or at the end). */
function flushResumedChanges() {
  for (const [runId, files] of S.resumedChanges) {
    HANDLERS.ChangeReport({ run_id: runId, files: [...files], truncated_count: 0 });
  }
  S.resumedChanges.clear();
}

/* ----- approvals ----- */

const DECISIONS = [
  ['allow_once', 'Allow once'],
  ['allow_session', 'Allow this session'],
  ['allow_project', 'Allow for project'],
  ['deny', 'Deny'],
];
const VERDICTS = {
  allow_once: 'allowed once',
  allow_session: 'allowed for this session',
  allow_project: 'allowed for this project',
  deny: 'denied',
};

function onApprovalRequested(ev) {
  const existing = S.approvals.get(ev.id);
  if (existing) {
    // Listed again as pending (snapshot): whatever we guessed, it is still open.
    if (!existing.classList.contains('resolved')) setCardOpen(existing, true);
    return;
  }
  const card = el('div', 'approval');
  card.dataset.id = ev.id;
  card.dataset.run = ev.run_id;
  const head = el('div', 'approval-head');
  // `display` is the whole call with invisible characters spelled out (escaped once, in
  // Rust, by the rules the terminal uses); it starts with the tool's name (`Write notes.txt`)
  // and is wrapped, never cut. `summary` may be abridged, so it only matches the call block.
  const command = el('code', 'approval-command', ev.display ?? ev.summary);
  head.append(marker('ask'), 'Allow ', command, '?');
  card.append(head);
  if (ev.reason) card.append(el('div', 'approval-reason', ev.reason));
  if (ev.diff) card.append(diffBlock(ev.diff));
  const actions = el('div', 'approval-actions');
  // A write where grants live, or a command outside the sandbox: only "once" can answer.
  const decisions = ev.once_only
    ? DECISIONS.filter(([d]) => d === 'allow_once' || d === 'deny')
    : DECISIONS;
  for (const [decision, label] of decisions) {
    const button = el('button', `decide ${decision}`, label);
    button.type = 'button';
    button.dataset.decision = decision;
    actions.append(button);
  }
  const reason = el('input', 'deny-reason');
  reason.type = 'text';
  reason.placeholder = 'reason for Deny (optional)';
  reason.setAttribute('aria-label', 'Reason for denying');
  actions.append(reason);
  card.append(actions, el('div', 'approval-note'));
  if (S.readOnly) noteOn(card, "waiting for the person's approval");
  S.approvals.set(ev.id, card);
  // Inside its call's block, the card stands between the call and its result, as in the
  // terminal; a request whose call is not on screen goes at the end.
  const call = callAwaiting(ev);
  if (call) {
    call.append(card);
    grew();
  } else {
    add(card, ev.run_id);
  }
  setCardOpen(card, true);
}

/** The unfinished call of this run and tool that the request is about (by its summary). */
function callAwaiting(ev) {
  const open = [...$('#transcript').querySelectorAll('.tool.open')]
    .filter((b) => b.dataset.run === ev.run_id && b.dataset.tool === ev.tool);
  return open.find((b) => b.dataset.summary.includes(ev.summary)) || open[open.length - 1];
}

/** Enables or disables a card's controls (never enabled for a read-only viewer). */
function setCardOpen(card, open) {
  card.classList.toggle('expired', false);
  for (const control of card.querySelectorAll('button, input')) control.disabled = !open || S.readOnly;
}

function noteOn(card, text, error, verdict) {
  const note = $('.approval-note', card);
  note.replaceChildren(...(verdict ? [marker('result')] : []), text);
  note.classList.toggle('err', !!error);
}

async function answerApproval(card, decision) {
  const body = { decision };
  const reason = $('.deny-reason', card).value.trim();
  if (decision === 'deny' && reason) body.reason = reason;
  setCardOpen(card, false);
  noteOn(card, 'sending…');
  try {
    await post(`/api/approvals/${encodeURIComponent(card.dataset.id)}`, body);
    if (!card.classList.contains('resolved')) noteOn(card, 'sent, waiting for the agent…');
  } catch (err) {
    if (err.status === 409) {
      // The session's own reason (who answered first), under the verdict if it came first.
      lostRace(card, err.message || 'Already answered elsewhere: the first answer wins.');
    } else {
      noteOn(card, err.message, true);
      setCardOpen(card, true);
    }
  }
}

function lostRace(card, reason) {
  if (!card.classList.contains('resolved')) noteOn(card, reason, true);
  let lost = $('.approval-lost', card);
  if (!lost) card.append((lost = el('div', 'approval-lost')));
  lost.textContent = `Your answer was not taken: ${reason}`;
}

function onApprovalResolved(ev) {
  const card = S.approvals.get(ev.id);
  if (!card) return;
  setCardOpen(card, false);
  card.classList.add('resolved', ev.decision === 'deny' ? 'denied' : 'allowed');
  card.dataset.decision = ev.decision;
  const by = ev.by === 'policy' ? ' by policy' : ev.by ? ` in ${ev.by}` : '';
  const reason = ev.reason ? `: ${ev.reason}` : '';
  noteOn(card, `${VERDICTS[ev.decision] || ev.decision}${by}${reason}`, false, true);
}

/* ----- end of a turn ----- */

function onOutcome(ev) {
  // A forked skill answers through its child run, whose text is not the turn's answer.
  if (ev.status === 'completed' && !S.answered.has(ev.run_id) && ev.result && ev.result.trim()) {
    $('.md', bubble('assistant', speaker(ev.run_id), ev.run_id)).innerHTML = renderMarkdown(ev.result);
  }
  // A failed turn's result is usually the `Error` just shown (a dead model server): once.
  const repeated = ev.status === 'error' && S.errors.has(String(ev.result || '').trim());
  if (ev.status === 'max_iters' || ev.status === 'stopped' || (ev.status === 'error' && ev.result && !repeated)) {
    add(el('div', 'line warn', oneLine(ev.result, 300)));
  }
  S.errors.clear();
  // Approvals of this turn that nobody answered can no longer be answered.
  for (const card of S.approvals.values()) {
    if (!card.classList.contains('resolved') && rootOf(card.dataset.run) === ev.run_id) {
      setCardOpen(card, false);
      card.classList.add('expired');
      noteOn(card, 'no longer pending: the turn ended');
    }
  }
  for (const runId of [...S.streams.keys()]) if (rootOf(runId) === ev.run_id) endStream(runId);
  add(el('div', `outcome ${ev.status}`, outcomeText(ev)));
  for (const runId of [...S.activity.keys()]) if (rootOf(runId) === ev.run_id) S.activity.delete(runId);
  showActivity();
  sessionsChanged();
}

/** A link that unfolds the run's audit trail (`linggen runs show`) under its line. */
function auditLink(runId) {
  const link = el('a', 'audit', 'audit trail');
  link.href = '#';
  link.title = `linggen runs show ${runId}`;
  link.addEventListener('click', async (e) => {
    e.preventDefault();
    const open = link.parentNode.nextElementSibling;
    if (open && open.classList.contains('audit-log')) return open.remove();
    const pre = el('pre', 'audit-log', 'loading…');
    link.parentNode.after(pre);
    try {
      const data = await request(`/api/run-log?run_id=${encodeURIComponent(runId)}`);
      pre.textContent = (data.lines || []).join('\n');
    } catch (err) {
      pre.textContent = err.message;
    }
  });
  return link;
}

function outcomeText(ev) {
  const mark = { completed: '✓', cancelled: '⊘', error: '✗', max_iters: '⚠', stopped: '⚠' }[ev.status] || '·';
  const parts = [`${mark} ${ev.status.replace('_', ' ')}`];
  if (ev.num_turns) parts.push(`${ev.num_turns} step${ev.num_turns === 1 ? '' : 's'}`);
  const ms = ev.duration_ms || 0;
  parts.push(ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
  const usage = ev.usage || {};
  if (usage.input_tokens || usage.output_tokens) {
    parts.push(`${kilo(usage.input_tokens || 0)} in · ${kilo(usage.output_tokens || 0)} out`);
    if (ms > 0 && usage.output_tokens) parts.push(`${(usage.output_tokens * 1000 / ms).toFixed(1)} tok/s`);
  }
  return parts.join(' · ');
}

/* ---------- header, activity, queue ---------- */

function setHeader(state) {
  if (state.agent_id) $('#agent').textContent = state.agent_id;
  if (state.mode) $('#mode').textContent = state.mode;
  // Like the shell's prompt: shown only when it is not the default.
  if (state.permission_mode) {
    $('#permission-mode').textContent = state.permission_mode;
    // Always there for a person who may change it (a chip is how); else only when unusual.
    $('#permission-mode').hidden = state.permission_mode === 'default' && S.readOnly;
    $('#permission-mode').classList.toggle('is-default', state.permission_mode === 'default');
  }
  if (state.model) {
    $('#model').textContent = state.model;
    $('#model').title = state.root ? `${state.model}\n${state.root}` : state.model;
  }
  if (state.root) document.title = `linggen · ${state.root.split('/').filter(Boolean).pop() || state.root}`;
  // The empty state's "where and with what" line.
  if (state.root) $('#empty-root').textContent = `workspace ${state.root}`;
  if (state.model) $('#empty-model').textContent = `model ${state.model}`;
}

const CONTEXT_PARTS = [
  ['system_prompt', 'system prompt'], ['project_docs', 'project docs'], ['memory', 'memory'],
  ['tools', 'tools'], ['skills_catalog', 'skills catalog'], ['history', 'history'],
  ['tool_results', 'tool results'],
];

// The meter: how full the window is; its tooltip says what the last request was made of
// (the same parts as /context in the shell). A response's count keeps the breakdown of the
// request it answered.
function setContext(c) {
  if (c.breakdown) S.breakdown = c.breakdown;
  const used = c.used_tokens || 0;
  const windowSize = c.token_limit;
  const box = $('#context');
  box.hidden = false;
  const pct = windowSize ? Math.min(100, Math.round((used * 100) / windowSize)) : 0;
  $('#context-fill').style.width = `${pct}%`;
  box.classList.toggle('high', pct >= 80);
  const compacted = c.summary_count ? ` · compacted ${c.summary_count}×` : '';
  $('#context-text').textContent = (windowSize ? `${kilo(used)} / ${kilo(windowSize)} (${pct}%)` : `${kilo(used)} tokens`) + compacted;
  const lines = [windowSize ? `context: ${used} of ${windowSize} tokens` : `context: ${used} tokens (window unknown)`];
  if (S.breakdown) {
    lines.push('the last request:');
    for (const [key, name] of CONTEXT_PARTS) lines.push(`  ${name}: ${S.breakdown[key] || 0}`);
  }
  if (c.summary_count) lines.push(`compacted ${c.summary_count}× (older messages are a summary)`);
  box.title = lines.join('\n');
}

function setBusy(busy) {
  S.busy = busy;
  document.body.classList.toggle('busy', busy);
  if (!busy) S.activity.clear();
  showActivity();
}

function showActivity() {
  const texts = [...S.activity.values()];
  $('#activity').hidden = !S.busy && !texts.length;
  $('#activity-text').textContent = texts.length ? texts[texts.length - 1] : 'working…';
  $('#cancel').hidden = S.readOnly || !S.busy;
}

function setQueue(queued) {
  const box = $('#queue');
  box.replaceChildren(...queued.map((text) => el('li', null, `queued: ${oneLine(text, 200)}`)));
  box.hidden = !queued.length;
}

const TODO_MARKS = { completed: '☒', in_progress: '☐', pending: '☐' };

/** The agent's todo list (`TodoWrite`), replaced whole by each `TodosUpdated`: a panel above
    the composer, its summary line naming the item in progress. The model's text goes in
    as text only. */
function setTodos(todos) {
  const box = $('#todos');
  box.hidden = !todos.length;
  const done = todos.filter((t) => t.status === 'completed').length;
  const doing = todos.find((t) => t.status === 'in_progress');
  $('#todos-summary').textContent = `Todos · ${done}/${todos.length} done` + (doing ? ` · ${oneLine(doing.active_form, 200)}` : '');
  $('#todos-list').replaceChildren(...todos.map((t) => {
    const item = el('li', `todo ${t.status}`);
    item.append(el('span', 'todo-mark', TODO_MARKS[t.status] || '☐'), ' ', el('span', 'todo-text', oneLine(t.content, 500)));
    return item;
  }));
}

/** How a background command stands, in the terminal's words. */
function taskState(t) {
  if (t.state === 'running') return 'running';
  if (t.state === 'stopped') return { model: 'stopped by the model', person: 'stopped' }[t.stopped_by] || 'stopped with the session';
  if (t.exit_code != null) return `exit ${t.exit_code}`;
  return t.signal != null ? `killed by signal ${t.signal}` : 'ended';
}

/** The session's background commands (`Bash` run_in_background): a panel above the
    composer, one row each with its state, command and last lines, and Stop while it runs.
    Command and output go in as text only. */
function drawTasks() {
  const tasks = [...S.tasks.values()];
  const box = $('#tasks');
  box.hidden = !tasks.length;
  const running = tasks.filter((t) => t.state === 'running').length;
  $('#tasks-summary').textContent = `Background · ${running} running of ${tasks.length}`;
  $('#tasks-list').replaceChildren(...tasks.map((t) => {
    const item = el('li', `task ${t.state}`);
    item.dataset.task = t.id;
    const head = el('div', 'task-head');
    head.append(el('span', 'task-id', t.id), ' ', el('span', 'task-state', taskState(t)), ' ', el('code', 'task-command', oneLine(t.command, 200)));
    if (t.state === 'running' && !S.readOnly) {
      const stop = el('button', 'task-stop', 'Stop');
      stop.type = 'button';
      stop.addEventListener('click', () => stopTask(t.id, stop));
      head.append(' ', stop);
    }
    item.append(head);
    if (t.tail && t.tail.length) item.append(el('pre', 'task-tail', t.tail.join('\n')));
    return item;
  }));
}

async function stopTask(id, button) {
  button.disabled = true;
  try {
    await post('/api/task-stop', withSession({ task_id: id }));
  } catch (err) {
    button.disabled = false;
    add(el('div', 'line error', `✗ ${err.message}`));
  }
}

/* ---------- scrolling ---------- */

let scrollFrame = 0;

/** Content was added: follow it if the reader is at the bottom, else offer a jump. */
function grew() {
  if (!S.stick) {
    $('#jump').hidden = false;
    return;
  }
  if (!scrollFrame) {
    scrollFrame = requestAnimationFrame(() => {
      scrollFrame = 0;
      const t = $('#transcript');
      t.scrollTop = t.scrollHeight;
    });
  }
}

function bindScroll() {
  const t = $('#transcript');
  t.addEventListener('scroll', () => {
    S.stick = t.scrollHeight - t.scrollTop - t.clientHeight < 48;
    if (S.stick) $('#jump').hidden = true;
  });
  $('#jump').addEventListener('click', () => {
    S.stick = true;
    $('#jump').hidden = true;
    grew();
  });
}

/* ---------- HTTP ---------- */

/* The page's credential: traded once for the link's ticket, kept in sessionStorage (this
   origin only, port included, unlike a cookie) and sent as a header; never a cookie. */
const CREDENTIAL_KEY = 'linggen-credential';

function credential() {
  try {
    return sessionStorage.getItem(CREDENTIAL_KEY) || '';
  } catch {
    return S.credential || '';
  }
}

function keepCredential(value) {
  S.credential = value;
  try {
    sessionStorage.setItem(CREDENTIAL_KEY, value);
  } catch { /* storage disabled: kept in memory for this page */ }
}

/** Trades the link's one-time ticket for this page's credential. */
async function redeemTicket(ticket) {
  const data = await request('/api/ticket', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ticket }),
  });
  if (data && data.credential) keepCredential(data.credential);
}

async function request(path, options) {
  let res;
  const headers = { ...((options && options.headers) || {}) };
  const bearer = credential();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  try {
    res = await fetch(path, { credentials: 'omit', cache: 'no-store', ...options, headers });
  } catch {
    throw Object.assign(new Error('The linggen server cannot be reached. Is it still running?'), { status: 0 });
  }
  let data = null;
  try {
    data = await res.json();
  } catch { /* an empty or non-JSON body */ }
  if (!res.ok) {
    const message = (data && data.error) || authHint(res.status) || `${res.status} ${res.statusText}`;
    throw Object.assign(new Error(message), { status: res.status });
  }
  return data;
}

function authHint(status) {
  if (status === 401) return 'Not signed in: each link works once. For a fresh one run /share in the shell, or press Enter where linggen serve runs.';
  if (status === 403) return 'Not allowed (a read-only link cannot send, answer or cancel).';
  return '';
}

const getJSON = (path) => request(path);
const post = (path, body) => request(path, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

/** Adds the selected session to a body or query (the server's default is the shared one). */
const withSession = (body) => (S.selected ? { ...body, session_id: S.selected } : body);
const sessionQuery = (sep) => (S.selected ? `${sep}session_id=${encodeURIComponent(S.selected)}` : '');

/* ---------- connection ---------- */

function setStatus(state, text) {
  const status = $('#status');
  status.dataset.state = state;
  status.textContent = text || { connecting: 'connecting…', connected: 'live', reconnecting: 'reconnecting…', offline: 'offline' }[state];
  composerAvailability();
}

/** A line above the transcript: `info` (read-only) or a problem, with an optional button. */
function showBanner(text, kind = 'error', action = null) {
  const banner = $('#banner');
  banner.textContent = text || '';
  banner.dataset.kind = kind;
  if (action) {
    const button = el('button', 'banner-action', action.label);
    button.type = 'button';
    button.addEventListener('click', action.run);
    banner.append(' ', button);
  }
  banner.hidden = !text;
}

// Reloads tried (1 s, 2 s, 4 s, 8 s apart) before the page stops and says the session is gone.
const RETRY_LIMIT = 4;

/**
 * The final state: the server is gone (`/share stop`, linggen exited) or refuses this
 * browser. Nothing runs on a timer any more; the person can retry by hand.
 */
function giveUp(err) {
  closeEvents();
  setStatus('offline', err && err.status === 401 ? 'no access' : err && err.status === 503 ? 'full' : 'disconnected');
  const text = err && err.status === 401
    ? 'This link needs its token: each /share link works once. Ask for a fresh one (/share in the shell, or Enter where linggen serve runs).'
    : err && (err.status === 403 || err.status === 503)
      ? err.message
      : 'The share ended or linggen stopped: this session is unreachable. Ask for a new /share link, or retry.';
  showBanner(text, 'error', { label: 'Retry', run: retryNow });
}

function retryNow() {
  S.attempts = 0;
  S.backoff = 1000;
  showBanner('');
  reload();
}

function closeEvents() {
  if (S.es) S.es.close();
  S.es = null;
  S.streamErrors = 0;
  clearTimeout(S.retry);
}

/** Fetches the snapshot, renders it from scratch and streams on from its `seq`. */
async function reload() {
  const gen = ++S.gen;
  closeEvents();
  setStatus('connecting');
  let snap;
  try {
    snap = await getJSON('/api/session' + sessionQuery('?'));
  } catch (err) {
    if (gen !== S.gen) return;
    // Nothing will come back after an auth failure; anything else may be a restart.
    if (err.status === 401 || err.status === 403) {
      giveUp(err);
    } else {
      showBanner(err.message);
      scheduleReload();
    }
    return;
  }
  if (gen !== S.gen) return;
  showBanner(snap.access === 'read_only' ? 'Read-only view: you can watch this session, not send or answer.' : '', 'info');
  renderSnapshot(snap);
  connect(gen);
  loadSessions();
}

/** Another reload after a pause, or the final state once RETRY_LIMIT reloads failed. */
function scheduleReload() {
  closeEvents();
  if (S.attempts >= RETRY_LIMIT) {
    giveUp(null);
    return;
  }
  S.attempts++;
  setStatus('reconnecting', `reconnecting… (${S.attempts}/${RETRY_LIMIT})`);
  S.retry = setTimeout(reload, S.backoff);
  S.backoff = Math.min(S.backoff * 2, 15000);
}

function renderSnapshot(snap) {
  resetView();
  S.sessionId = snap.session_id || null;
  S.readOnly = snap.access === 'read_only';
  document.body.classList.toggle('readonly', S.readOnly);
  composerAvailability();
  $('#empty-title').textContent = S.readOnly
    ? 'Nothing here yet: the conversation shows up here as it happens.'
    : 'Type a message below to start.';
  document.body.classList.add('loaded');
  const state = snap.state || {};
  setHeader(state);
  S.settings = { ...state };
  setQueue(state.queue || []);
  setTodos(state.todos || []);
  S.tasks = new Map((state.tasks || []).map((t) => [t.id, t]));
  drawTasks();
  if (state.context) setContext(state.context);
  for (const run of snap.runs || []) S.runs.set(run.run_id, { parent: run.parent_id || null, agent: run.agent_id, model: run.model || null });
  for (const run of snap.runs || []) tabRun(run.run_id, run.agent_id, run.parent_id, run.task).status = run.status;
  for (const ev of snap.transcript || []) apply(ev);
  flushResumedChanges();
  for (const part of snap.streaming || []) {
    // A long answer in flight comes as its end only; the whole arrives with its message.
    const token = (part.skipped_bytes ? '…\n\n' : '') + (part.text || '');
    apply({ type: 'Token', run_id: part.run_id, agent_id: part.agent_id, token, thinking: !!part.thinking, done: false });
  }
  for (const ev of snap.pending_approvals || []) apply({ type: 'ApprovalRequested', ...ev });
  setBusy(state.status === 'running');
  S.seq = Number(snap.seq) || 0;
  flushStreams();
  S.stick = true;
  grew();
}

/** Opens the event stream with a one-time stream ticket (an EventSource sends no header). */
async function connect(gen) {
  let ticket;
  try {
    ticket = (await post('/api/stream-ticket', {})).ticket;
  } catch (err) {
    if (gen !== S.gen) return;
    // 503: every place for a stream is taken (the share is full), which retrying soon won't change.
    if (err.status === 503) return giveUp(err);
    setStatus('offline');
    showBanner(err.message);
    if (err.status !== 401 && err.status !== 403) scheduleReload();
    return;
  }
  if (gen !== S.gen) return;
  const es = new EventSource(`/api/events?last_event_id=${S.seq}${sessionQuery('&')}&ticket=${encodeURIComponent(ticket)}`);
  S.es = es;
  es.onopen = () => {
    if (gen !== S.gen) return;
    S.backoff = 1000;
    S.attempts = 0;
    S.streamErrors = 0;
    setStatus('connected');
  };
  es.onerror = () => {
    if (gen !== S.gen) return;
    // The browser's own retry would reuse the spent stream ticket: close the stream and
    // open a new one (a fresh ticket, from the last event seen) once; when that fails too,
    // or the browser gave up on an error answer, the page takes over with bounded reloads.
    const gaveUp = es.readyState === EventSource.CLOSED;
    es.close();
    S.es = null;
    if (gaveUp || ++S.streamErrors > 1) {
      scheduleReload();
    } else {
      setStatus('reconnecting');
      clearTimeout(S.retry);
      S.retry = setTimeout(() => connect(gen), S.backoff);
    }
  };
  es.onmessage = (msg) => {
    if (gen !== S.gen) return;
    let ev;
    try {
      ev = JSON.parse(msg.data);
    } catch {
      return;
    }
    // Resync carries no id (its lastEventId is the previous frame's), so it is checked first.
    if (ev.type === 'Resync') {
      reload();
      return;
    }
    // A reconnect may replay what was already rendered.
    const id = msg.lastEventId === '' ? NaN : Number(msg.lastEventId);
    if (id <= S.seq) return;
    apply(ev);
    if (id > S.seq) S.seq = id;
  };
}

/* ---------- sessions (linggen serve) ---------- */

let sessionsTimer = 0;

/** Message counts and titles change at the end of turns; refresh the list then. */
function sessionsChanged() {
  if (!S.canOpen) return;
  clearTimeout(sessionsTimer);
  sessionsTimer = setTimeout(loadSessions, 600);
}

async function loadSessions() {
  let data;
  try {
    data = await getJSON('/api/sessions');
  } catch {
    document.body.classList.add('no-sessions');
    return;
  }
  document.body.classList.remove('no-sessions');
  S.canOpen = !!data.can_open && !S.readOnly;
  renderSessions(data.sessions || [], S.sessionId || data.current);
}

function renderSessions(sessions, current) {
  const list = $('#sessions');
  $('#new-session').hidden = !S.canOpen;
  if (!S.canOpen) {
    const item = el('li', 'session current');
    item.append(el('div', 'title', 'this session'), el('code', 'id', current || '–'));
    list.replaceChildren(item);
    return;
  }
  // A session that has not stored anything yet is not listed, but it is the one shown.
  const all = current && !sessions.some((s) => s.id === current)
    ? [{ id: current, title: 'new session', message_count: 0, live: true }, ...sessions]
    : sessions;
  list.replaceChildren(...all.map((s) => sessionItem(s, s.id === current)));
}

function sessionItem(s, isCurrent) {
  const item = el('li', isCurrent ? 'session current' : 'session');
  item.dataset.id = s.id;
  const button = el('button');
  button.type = 'button';
  if (isCurrent) button.setAttribute('aria-current', 'true');
  const title = el('div', 'title', s.title || 'untitled');
  if (s.live) title.prepend(el('span', 'live', '● '));
  const meta = [`${s.message_count ?? 0} msgs`, ago(s.updated_at), s.model].filter(Boolean).join(' · ');
  button.append(title, el('div', 'meta', meta));
  button.title = `${s.title || 'untitled'}\n${s.id}`;
  button.addEventListener('click', () => openSession(s.id));
  item.append(button);
  return item;
}

/** "5 min ago" from unix seconds, milliseconds or an ISO date. */
function ago(value) {
  if (value == null || value === '') return '';
  const ms = typeof value === 'number' ? (value < 1e12 ? value * 1000 : value) : Date.parse(value);
  if (Number.isNaN(ms)) return String(value);
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

async function openSession(id) {
  await switchSession({ session_id: id });
}

async function switchSession(body) {
  if (!S.canOpen) return;
  try {
    const data = await post('/api/sessions', body);
    S.selected = (data && data.session_id) || body.session_id || null;
  } catch (err) {
    showBanner(err.message);
    return;
  }
  // The choice lives in the address bar, so a reload shows the same session.
  const url = new URL(location.href);
  if (S.selected) url.searchParams.set('session_id', S.selected);
  history.replaceState(null, '', url);
  document.body.classList.remove('sidebar-open');
  await reload();
}

/* ---------- composer and buttons ---------- */

function bindComposer() {
  const input = $('#input');
  $('#composer').addEventListener('submit', (e) => {
    e.preventDefault();
    sendMessage();
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      sendMessage();
    }
  });
  input.addEventListener('input', () => {
    autoGrow();
    slashMenu();
  });
  input.addEventListener('keydown', (e) => {
    // Tab takes the first `/` suggestion, as in the shell.
    const first = $('#slash-menu button');
    if (e.key === 'Tab' && first && !$('#slash-menu').hidden) {
      e.preventDefault();
      first.click();
    }
    if (e.key === 'Escape') hideSlashMenu();
  });
  input.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files || [])].filter((f) => f.type.startsWith('image/'));
    if (files.length) {
      e.preventDefault();
      files.forEach(addImage);
    }
  });
  const composer = $('#composer');
  composer.addEventListener('dragover', (e) => e.preventDefault());
  composer.addEventListener('drop', (e) => {
    const files = [...(e.dataTransfer?.files || [])].filter((f) => f.type.startsWith('image/'));
    if (!files.length) return;
    e.preventDefault();
    files.forEach(addImage);
  });
  $('#pending-images').addEventListener('click', (e) => {
    const remove = e.target.closest('button[data-index]');
    if (!remove) return;
    S.pendingImages.splice(Number(remove.dataset.index), 1);
    showPendingImages();
  });
  $('#slash-menu').addEventListener('click', (e) => {
    const button = e.target.closest('button[data-name]');
    if (!button) return;
    input.value = `/${button.dataset.name} `;
    hideSlashMenu();
    autoGrow();
    input.focus();
  });
}

/* Images pasted or dropped into the message box, sent with the next message. */
const MAX_IMAGES = 4;

function addImage(file) {
  if (S.pendingImages.length >= MAX_IMAGES) {
    composerError(`A message takes at most ${MAX_IMAGES} images.`);
    return;
  }
  const reader = new FileReader();
  reader.onload = () => {
    const url = String(reader.result || '');
    const data = url.slice(url.indexOf(',') + 1);
    S.pendingImages.push({ media_type: file.type, data, name: file.name || 'pasted image', size: file.size });
    showPendingImages();
  };
  reader.readAsDataURL(file);
}

function showPendingImages() {
  const list = $('#pending-images');
  list.replaceChildren(...S.pendingImages.map((image, index) => {
    const chip = document.createElement('span');
    chip.className = 'image-chip';
    chip.textContent = `🖼 ${image.name} · ${Math.max(1, Math.ceil(image.size / 1024))} KB `;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.dataset.index = String(index);
    remove.title = 'Remove';
    remove.textContent = '×';
    chip.append(remove);
    return chip;
  }));
  list.hidden = S.pendingImages.length === 0;
}

/* The skills and custom commands `/` offers (`GET /api/commands`), fetched when the menu
   opens and kept for a few seconds: they change when files do. */
let slashCache = { at: 0, commands: [] };

async function slashCommands() {
  if (Date.now() - slashCache.at > 5000) {
    const data = await getJSON('/api/commands');
    slashCache = { at: Date.now(), commands: (data && data.commands) || [] };
  }
  return slashCache.commands;
}

async function slashMenu() {
  const text = $('#input').value;
  const typed = /^\/([^\s]*)$/.exec(text);
  if (!typed) return hideSlashMenu();
  let commands;
  try {
    commands = await slashCommands();
  } catch {
    return hideSlashMenu();
  }
  if ($('#input').value !== text) return;
  const matches = commands.filter((c) => c.name.startsWith(typed[1])).slice(0, 12);
  const menu = $('#slash-menu');
  menu.replaceChildren(...matches.map((c) => {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.name = c.name;
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = `/${c.name}${c.argument_hint ? ' ' + c.argument_hint : ''}`;
    const about = document.createElement('span');
    about.className = 'about';
    about.textContent = `${c.kind === 'command' ? 'command' : 'skill'} · ${c.description || ''}`;
    button.append(name, about);
    item.append(button);
    return item;
  }));
  menu.hidden = matches.length === 0;
}

function hideSlashMenu() {
  const menu = $('#slash-menu');
  menu.hidden = true;
  menu.replaceChildren();
}

function autoGrow() {
  const input = $('#input');
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}

function composerError(text) {
  const box = $('#composer-error');
  box.textContent = text || '';
  box.hidden = !text;
}

let sending = false;

async function sendMessage() {
  const input = $('#input');
  const content = input.value;
  if (!content.trim() || sending || S.readOnly) return;
  sending = true;
  $('#send').disabled = true;
  composerError('');
  try {
    const images = S.pendingImages.map(({ media_type, data }) => ({ media_type, data }));
    await post('/api/messages', withSession(images.length ? { content, images } : { content }));
    input.value = '';
    S.pendingImages = [];
    showPendingImages();
    hideSlashMenu();
    autoGrow();
    S.stick = true;
    grew();
  } catch (err) {
    composerError(err.message);
  } finally {
    sending = false;
    composerAvailability();
    input.focus();
  }
}

async function cancelTurn() {
  const button = $('#cancel');
  button.disabled = true;
  try {
    await post('/api/cancel', withSession({}));
  } catch (err) {
    composerError(err.message);
  } finally {
    button.disabled = false;
  }
}

/** Clicks inside the transcript: approval buttons and code copy buttons. */
function bindTranscript() {
  $('#transcript').addEventListener('click', (e) => {
    const decide = e.target.closest('button[data-decision]');
    if (decide && !decide.disabled) {
      answerApproval(decide.closest('.approval'), decide.dataset.decision);
      return;
    }
    const copy = e.target.closest('button.copy');
    if (copy) copyCode(copy);
  });
}

async function copyCode(button) {
  const code = button.closest('.code').querySelector('code').textContent;
  try {
    await navigator.clipboard.writeText(code);
    button.textContent = 'copied';
  } catch {
    button.textContent = 'copy failed';
  }
  setTimeout(() => (button.textContent = 'copy'), 1500);
}

/* ---------- theme ---------- */

const THEME_KEY = 'linggen-theme';

function initTheme() {
  let saved = null;
  try {
    saved = localStorage.getItem(THEME_KEY);
  } catch { /* storage disabled: follow the system */ }
  if (saved === 'light' || saved === 'dark') document.documentElement.dataset.theme = saved;
  $('#theme-toggle').addEventListener('click', () => {
    const dark = (document.documentElement.dataset.theme ||
      (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')) === 'dark';
    const next = dark ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch { /* not remembered, still applied */ }
  });
}

/* ---------- settings chips (POST /api/settings) ---------- */

// The header's chips change the session's settings as `/agent`, `/mode`, `/model` and
// `/permissions` do in the shell: the session takes or refuses the change, and every
// window (the terminal's prompt too) follows its `SettingsUpdated`. What each may be set
// to comes from `settingChoices`, the one place to swap for a fuller agent list.
const CHIPS = {
  agent: { field: 'agent', choices: (c) => c.agents },
  mode: { field: 'mode', choices: (c) => c.modes },
  model: { field: 'model', choices: (c) => c.models },
  'permission-mode': { field: 'permission_mode', choices: (c) => (c.permission_modes || []).map((name) => ({ name })) },
};

const settingChoices = () => getJSON('/api/settings');

function bindChips() {
  for (const [id, chip] of Object.entries(CHIPS)) {
    const node = $(`#${id}`);
    node.setAttribute('role', 'button');
    node.setAttribute('aria-haspopup', 'menu');
    node.tabIndex = 0;
    node.addEventListener('click', (e) => {
      e.stopPropagation();
      openChipMenu(node, chip);
    });
    node.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' && e.key !== ' ') return;
      e.preventDefault();
      openChipMenu(node, chip);
    });
  }
  document.addEventListener('click', (e) => {
    if (!e.target.closest('#chip-menu')) closeChipMenu();
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') closeChipMenu();
  });
  // It is placed under its chip when it opens; after a resize that place is wrong.
  window.addEventListener('resize', closeChipMenu);
}

/** The chip's choices under it; a viewer gets none (it may not change anything). */
async function openChipMenu(node, chip) {
  const menu = $('#chip-menu');
  if (S.readOnly) return;
  if (!menu.hidden && menu.dataset.for === node.id) return closeChipMenu();
  let choices;
  try {
    choices = chip.choices(await settingChoices()) || [];
  } catch (err) {
    composerError(err.message);
    return;
  }
  // The model chip shows the session's label, `ID (model @ url)`.
  const current = node.textContent;
  const isCurrent = (name) => current === name || current.startsWith(`${name} (`);
  menu.replaceChildren(...choices.map((c) => {
    const item = el('li');
    const button = el('button', isCurrent(c.name) ? 'current' : null);
    button.type = 'button';
    button.setAttribute('role', 'menuitem');
    button.dataset.value = c.name;
    button.append(el('span', 'name', c.name));
    if (c.description) button.append(el('span', 'about', c.description));
    button.addEventListener('click', () => changeSetting(chip.field, c.name));
    item.append(button);
    return item;
  }));
  const r = node.getBoundingClientRect();
  menu.style.left = `${Math.max(4, Math.min(r.left, window.innerWidth - 284))}px`;
  menu.style.top = `${r.bottom + 4}px`;
  menu.dataset.for = node.id;
  menu.hidden = false;
}

function closeChipMenu() {
  const menu = $('#chip-menu');
  menu.hidden = true;
  menu.replaceChildren();
  delete menu.dataset.for;
}

/** Sends one change; a refusal shows the session's own sentence. */
async function changeSetting(field, value) {
  closeChipMenu();
  composerError('');
  try {
    await post('/api/settings', withSession({ [field]: value }));
  } catch (err) {
    composerError(err.message);
  }
}

/* ---------- tabs: one per agent ---------- */

// The main tab is the conversation as it always was. Every agent that ran in the session
// (delegated runs included) gets a tab with its status and its runs: each run's task, tool
// calls, answers and outcome, and a Cancel button while it runs. The tabs are a second
// fold of the same events, so a reload builds them again from the snapshot.
const T = {
  active: 'main',
  agents: new Map(), // agent -> {status, detail}
  runs: new Map(), // run_id -> {id, agent, parent, task, status, items, note}
  dirty: new Set(), // runs to draw again
  frame: 0,
};

const RUN_END = { completed: 'completed', error: 'failed', failed: 'failed', cancelled: 'cancelled', max_iters: 'failed', stopped: 'failed' };

function resetTabs() {
  T.agents.clear();
  T.runs.clear();
  T.dirty.clear();
  $('#agent-panels').replaceChildren();
  drawTabs();
}

function tabRun(id, agent, parent, task) {
  let run = T.runs.get(id);
  if (!run) {
    run = { id, agent, parent: parent || null, task: task || '', status: 'running', items: [], note: '' };
    T.runs.set(id, run);
  }
  if (agent) run.agent = agent;
  if (task && !run.task) run.task = task;
  if (!T.agents.has(run.agent)) T.agents.set(run.agent, { status: 'idle', detail: '' });
  T.dirty.add(id);
  return run;
}

const TAB_HANDLERS = {
  RunStarted: (ev) => tabRun(ev.run_id, ev.agent_id, ev.parent_id, ev.task),
  SubagentSpawned(ev) {
    // A background run outlives the turn that started it: that turn's end does not end it.
    tabRun(ev.subagent_id, ev.agent_id, ev.parent_id, ev.task).background = !!ev.background;
  },
  SubagentResult(ev) {
    const run = tabRun(ev.subagent_id, ev.agent_id, ev.parent_id);
    run.status = ev.outcome;
    if (ev.result && !run.items.some((i) => i.kind === 'answer')) run.items.push({ kind: 'answer', text: ev.result });
  },
  Outcome(ev) {
    const run = T.runs.get(ev.run_id);
    if (run) run.status = ev.status;
    for (const r of T.runs.values()) if (r.status === 'running' && !r.background && tabRoot(r.id) === ev.run_id) r.status = ev.status === 'completed' ? 'completed' : 'cancelled';
    T.dirty.add(ev.run_id);
  },
  AgentStatus(ev) {
    const run = T.runs.get(ev.run_id);
    if (!run) return;
    T.agents.set(run.agent, { status: ev.status, detail: ev.detail || '' });
    run.activity = ev.status === 'idle' ? '' : activityText(ev);
  },
  /** The answer as it streams; its `Message` replaces it. */
  Token(ev) {
    const run = T.runs.get(ev.run_id);
    if (!run || ev.thinking) return;
    if (!ev.token) return;
    run.streaming = (run.streaming || '') + ev.token;
    run.activity = `${run.agent} is answering…`;
  },
  ToolCallStarted(ev) {
    const run = T.runs.get(ev.run_id);
    if (!run) return;
    const item = run.items.find((i) => i.kind === 'tool' && i.call === ev.call_id);
    if (item) item.summary = ev.summary;
    else run.items.push({ kind: 'tool', call: ev.call_id, summary: ev.summary, result: null, ok: true });
  },
  ToolCallFinished(ev) {
    const item = T.runs.get(ev.run_id)?.items.find((i) => i.kind === 'tool' && i.call === ev.call_id);
    if (item) Object.assign(item, { result: ev.summary, ok: ev.ok });
  },
  Message(ev) {
    if (!ev.run_id) return;
    let run = T.runs.get(ev.run_id);
    if (!run) {
      // A resumed run: its messages are all there is of it.
      run = tabRun(ev.run_id, ev.role === 'assistant' ? ev.from : ev.to, null, ev.role === 'user' ? ev.content : '');
      run.status = 'earlier';
    }
    if (ev.role === 'assistant') {
      run.streaming = '';
      if ((ev.content || '').trim()) run.items.push({ kind: 'answer', text: ev.content });
      for (const call of ev.tool_calls || []) {
        if (!run.items.some((i) => i.kind === 'tool' && i.call === call.id)) run.items.push({ kind: 'tool', call: call.id, summary: callSummary(call), result: null, ok: true });
      }
    } else if (ev.role === 'tool') {
      // A resumed call has no `ToolCallFinished`: its output stands for the result line.
      const item = run.items.find((i) => i.kind === 'tool' && i.call === ev.tool_call_id);
      if (item && item.result == null) Object.assign(item, { result: resultSummary(ev.content), ok: !ev.is_error });
    }
  },
};

function tabRoot(runId) {
  let id = runId;
  for (let n = 0; T.runs.get(id)?.parent && n < 16; n++) id = T.runs.get(id).parent;
  return id;
}

function tabsApply(ev) {
  const handler = ev && TAB_HANDLERS[ev.type];
  if (!handler) return;
  handler(ev);
  if (ev.run_id) T.dirty.add(ev.run_id);
  if (ev.subagent_id) T.dirty.add(ev.subagent_id);
  if (!T.frame) T.frame = requestAnimationFrame(drawDirtyTabs);
}

function drawDirtyTabs() {
  T.frame = 0;
  for (const id of T.dirty) {
    const run = T.runs.get(id);
    if (run) drawRun(run);
  }
  T.dirty.clear();
  drawTabs();
}

/** An agent's status: what its last `AgentStatus` said, idle once none of its runs runs. */
function agentStatus(agent) {
  const running = [...T.runs.values()].some((r) => r.agent === agent && r.status === 'running');
  const known = T.agents.get(agent);
  return running ? known?.status || 'running' : 'idle';
}

/** The tab bar, updated in place (a tab is the same element while runs stream, so a
    click on it is never lost to a redraw). */
function drawTabs() {
  const bar = $('#tabs');
  tabButton(bar, 'main', 'conversation', null, 0);
  for (const agent of T.agents.keys()) {
    const runs = [...T.runs.values()].filter((r) => r.agent === agent).length;
    tabButton(bar, agent, agent, agentStatus(agent), runs);
  }
  for (const tab of [...bar.children]) if (tab.dataset.tab !== 'main' && !T.agents.has(tab.dataset.tab)) tab.remove();
  bar.hidden = T.agents.size === 0;
  if (T.active !== 'main' && !T.agents.has(T.active)) showTab('main');
}

function tabButton(bar, key, label, status, runs) {
  let button = [...bar.children].find((b) => b.dataset.tab === key);
  if (!button) {
    button = el('button', 'tab');
    button.type = 'button';
    button.setAttribute('role', 'tab');
    button.dataset.tab = key;
    button.append(el('span', 'dot'), el('span', 'label', label), el('span', 'runs'));
    bar.append(button);
  }
  button.setAttribute('aria-selected', String(T.active === key));
  const [dot, , count] = button.children;
  dot.hidden = !status;
  dot.className = `dot s-${status}`;
  button.title = status ? `${label}: ${status.replace('_', ' ')}` : label;
  count.hidden = !runs;
  count.textContent = String(runs);
}

function showTab(key) {
  T.active = key;
  document.body.classList.toggle('agent-tab', key !== 'main');
  for (const panel of $('#agent-panels').children) panel.hidden = panel.dataset.agent !== key;
  for (const tab of $('#tabs').children) tab.setAttribute('aria-selected', String(tab.dataset.tab === key));
  if (key === 'main') grew();
}

function agentPanel(agent) {
  const panels = $('#agent-panels');
  let panel = [...panels.children].find((p) => p.dataset.agent === agent);
  if (!panel) {
    panel = el('section', 'agent-panel');
    panel.dataset.agent = agent;
    panel.setAttribute('role', 'tabpanel');
    panel.hidden = T.active !== agent;
    panels.append(panel);
  }
  return panel;
}

/** A run's card: built once, then updated in place (its Cancel button stays the same
    element while the answer streams, so a click on it is never lost to a redraw). */
function runCard(run) {
  if (run.view) return run.view;
  const view = {
    card: el('div', 'run-card'),
    head: el('div', 'run-head'),
    dot: el('span', 'dot'),
    status: el('span', 'run-status'),
    from: el('span', 'run-from'),
    cancel: el('button', 'cancel-run', 'Cancel'),
    task: el('div', 'run-task'),
    items: el('div', 'run-items'),
    // Not `.msg.streaming`: that is the conversation's answer in flight.
    stream: el('div', 'run-stream'),
    note: el('div', 'line error'),
    drawn: '',
  };
  view.card.dataset.run = run.id;
  view.cancel.type = 'button';
  view.cancel.dataset.run = run.id;
  view.stream.append(el('div', 'md'));
  view.head.append(view.dot, view.status, view.from, view.cancel);
  view.card.append(view.head, view.task, view.items, view.stream, view.note);
  agentPanel(run.agent).append(view.card);
  run.view = view;
  return view;
}

function drawRun(run) {
  const view = runCard(run);
  const status = RUN_END[run.status] || run.status;
  const running = status === 'running';
  view.card.className = `run-card ${status}`;
  view.dot.className = `dot s-${running ? agentStatus(run.agent) : status}`;
  view.status.textContent = running && run.activity ? run.activity : status;
  const parent = run.parent && T.runs.get(run.parent);
  view.from.textContent = parent ? `from ${parent.agent}` : '';
  view.cancel.hidden = !running || S.readOnly;
  view.task.textContent = run.task || '(task not recorded)';
  // The calls and answers change a few times a run; redrawn only when they did.
  const drawn = JSON.stringify(run.items);
  if (drawn !== view.drawn) {
    view.drawn = drawn;
    view.items.replaceChildren(...run.items.flatMap(runItem));
  }
  const streaming = running ? (run.streaming || '').trim() : '';
  view.stream.hidden = !streaming;
  if (streaming) $('.md', view.stream).innerHTML = renderMarkdown(run.streaming);
  view.note.textContent = run.note || '';
  view.note.hidden = !run.note;
}

function runItem(item) {
  if (item.kind === 'answer') {
    const node = el('div', 'msg assistant');
    node.append(el('div', 'md'));
    $('.md', node).innerHTML = renderMarkdown(item.text);
    return [node];
  }
  const block = el('div', `tool ${item.result == null ? 'open' : item.ok ? 'ok' : 'failed'}`);
  block.append(toolLine(item.summary));
  if (item.result != null) block.append(resultLine(item.result, item.ok));
  return [block];
}

async function cancelRun(button) {
  const run = T.runs.get(button.dataset.run);
  button.disabled = true;
  try {
    await post('/api/agent-cancel', { run_id: button.dataset.run });
  } catch (err) {
    if (run) {
      run.note = err.message;
      drawRun(run);
    }
  }
}

function bindTabs() {
  $('#tabs').addEventListener('click', (e) => {
    const tab = e.target.closest('button[data-tab]');
    if (tab) showTab(tab.dataset.tab);
  });
  $('#agent-panels').addEventListener('click', (e) => {
    const cancel = e.target.closest('button.cancel-run');
    if (cancel && !cancel.disabled) cancelRun(cancel);
  });
  $('#transcript').addEventListener('click', (e) => {
    const link = e.target.closest('a.tab-link');
    if (!link) return;
    e.preventDefault();
    showTab(link.dataset.agent);
  });
}

/** A link from a delegated run's line in the conversation to its agent's tab. */
function tabLink(agent) {
  const link = el('a', 'tab-link', `${agent} tab →`);
  link.href = '#';
  link.dataset.agent = agent;
  return link;
}

/* ---------- the message box and the connection ---------- */

/** What the empty message box says; one row, so a phone gets the short words. */
const NARROW = window.matchMedia('(max-width: 760px)');
const placeholder = (wide, narrow) => (NARROW.matches ? narrow : wide);
NARROW.addEventListener('change', () => composerAvailability());

/** The message box works only while the page is connected (and never for a viewer). */
function composerAvailability() {
  const offline = $('#status').dataset.state !== 'connected';
  const closed = S.readOnly || offline;
  $('#input').disabled = closed;
  $('#send').disabled = closed || sending;
  $('#composer').classList.toggle('disconnected', offline && !S.readOnly);
  $('#input').placeholder = offline && !S.readOnly
    ? placeholder('Disconnected: the message box opens again once the page reconnects.', 'Disconnected…')
    : placeholder('Message linggen… (paste or drop an image to send it)', 'Message linggen…');
}

/* ---------- start ---------- */

async function start() {
  const url = new URL(location.href);
  // The ticket leaves the address bar (and history) before anything else; it works once.
  const ticket = url.searchParams.get('ticket');
  if (url.searchParams.has('ticket') || url.searchParams.has('token')) {
    url.searchParams.delete('ticket');
    url.searchParams.delete('token');
    history.replaceState(null, '', url);
  }
  S.selected = url.searchParams.get('session_id');
  initTheme();
  bindScroll();
  bindComposer();
  bindTranscript();
  bindChips();
  bindTabs();
  $('#cancel').addEventListener('click', cancelTurn);
  $('#new-session').addEventListener('click', () => switchSession({}));
  $('#sidebar-toggle').addEventListener('click', () => document.body.classList.toggle('sidebar-open'));
  if (ticket) {
    try {
      await redeemTicket(ticket);
    } catch (err) {
      // A used link while this tab still holds a credential (a reload) is fine.
      if (!credential()) {
        giveUp(err);
        return;
      }
    }
  }
  reload();
}

if (typeof window !== 'undefined' && typeof document !== 'undefined') start();
