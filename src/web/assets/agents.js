'use strict';
// The Agents panel (doc/web.md#the-agents-panel): lists the workspace's agents by where
// they come from, and, with a full-access link, creates, edits, duplicates and deletes
// their files through /api/agents. The server checks every file with the loader's own
// parser; the panel shows its answer (the file that would be written, or what is wrong).
// A classic script loaded after app.js: it uses app.js's `$`, `el`, `getJSON` and `post`.
// Everything shown is set as text (`el`, textContent), never parsed as HTML. All of it is
// inside one function, so no name here can clash with app.js's globals.

(() => {
const AG = { data: null, models: null, form: null };

const SOURCES = [
  ['personal', 'Personal ($LINGGEN_HOME/agents)'],
  ['project', 'Project'],
  ['builtin', 'Built-in'],
];

function agentsPanel() {
  return $('#agents-panel');
}

async function toggleAgents() {
  const panel = agentsPanel();
  panel.hidden = !panel.hidden;
  document.body.classList.toggle('agents-open', !panel.hidden);
  if (!panel.hidden) await loadAgents();
}

async function loadAgents() {
  try {
    const [data, models] = await Promise.all([getJSON('/api/agents'), getJSON('/api/models')]);
    AG.data = data;
    AG.models = models;
    renderAgents();
  } catch (err) {
    renderAgentsError(err.message);
  }
}

function panelHead(title) {
  const head = el('div', 'agents-head');
  head.append(el('strong', null, title));
  const close = el('button', 'agents-close', '×');
  close.type = 'button';
  close.title = 'Close';
  close.addEventListener('click', toggleAgents);
  head.append(close);
  return head;
}

function renderAgentsError(message) {
  const panel = agentsPanel();
  panel.replaceChildren(panelHead('Agents'), el('p', 'agents-error', message));
}

function renderAgents() {
  const panel = agentsPanel();
  const data = AG.data;
  const head = panelHead('Agents');
  if (data.can_edit) {
    const add = button('+ New agent', 'agents-new', () => openForm(null, 'create'));
    add.id = 'agents-new';
    head.insertBefore(add, head.lastChild);
  }
  panel.replaceChildren(head);
  if (!data.can_edit) panel.append(el('p', 'agents-note', 'Read-only link: you can look, not change.'));
  const note = el('p', 'agents-note', 'The Agents panel writes the same files the terminal reads; changes apply at once.');
  panel.append(note);
  const form = el('div', null);
  form.id = 'agent-form-slot';
  panel.append(form);
  for (const [source, label] of SOURCES) {
    const agents = data.agents.filter((a) => a.source === source);
    if (!agents.length) continue;
    panel.append(el('h3', 'agents-group', label));
    for (const agent of agents) panel.append(agentCard(agent, data.can_edit));
  }
  if (data.warnings.length) {
    panel.append(el('h3', 'agents-group', 'Warnings'));
    const list = el('ul', 'agents-warnings');
    for (const w of data.warnings) list.append(el('li', null, w));
    panel.append(list);
  }
}

function button(text, cls, onClick) {
  const b = el('button', cls, text);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

const listText = (value, all) => (value == null || value === '*' ? all : (value.length ? value.join(', ') : 'none'));

function agentCard(agent, canEdit) {
  const card = el('div', 'agent-card');
  card.dataset.name = agent.name;
  const title = el('div', 'agent-title');
  title.append(el('strong', 'agent-name', agent.name), el('span', 'chip agent-source', agent.folder));
  card.append(title);
  if (agent.description) card.append(el('div', 'agent-description', agent.description));
  const meta = [
    `model: ${agent.model || "the session's"}`,
    `mode: ${agent.mode || 'chat'}`,
    `tools: ${listText(agent.tools, 'all')}`,
    `skills: ${listText(agent.skills, 'all')}`,
    `policy: ${agent.policy.allow.join(', ') || 'none'}`,
  ];
  if (agent.policy.delegate_targets) meta.push(`delegates to: ${agent.policy.delegate_targets.join(', ')}`);
  card.append(el('div', 'agent-meta', meta.join(' · ')));
  card.append(el('div', 'agent-path', agent.path));
  if (canEdit) card.append(cardActions(agent, card));
  return card;
}

function cardActions(agent, card) {
  const actions = el('div', 'agent-actions');
  if (agent.editable) {
    actions.append(button('Edit', 'agent-edit', () => openForm(agent, 'edit')));
    const del = button('Delete', 'agent-delete', () => {
      del.hidden = true;
      const confirm = button(`Delete ${agent.path}?`, 'agent-delete-confirm danger', () => deleteAgent(agent, card));
      const keep = button('Keep', 'agent-delete-keep', () => { confirm.remove(); keep.remove(); del.hidden = false; });
      actions.append(confirm, keep);
    });
    actions.append(del);
  }
  actions.append(button('Duplicate', 'agent-duplicate', () => openForm(agent, 'duplicate')));
  return actions;
}

async function deleteAgent(agent, card) {
  try {
    await post(`/api/agents/${encodeURIComponent(agent.name)}/delete`, {});
    await loadAgents();
  } catch (err) {
    card.append(el('div', 'agents-error', err.message));
  }
}

/* ---------- the form: create, edit, duplicate ---------- */

function field(label, input) {
  const row = el('label', 'agent-field');
  row.append(el('span', null, label), input);
  return row;
}

function input(id, value, placeholder) {
  const node = el('input');
  node.id = id;
  node.value = value || '';
  if (placeholder) node.placeholder = placeholder;
  return node;
}

function select(id, options, value) {
  const node = el('select');
  node.id = id;
  for (const [v, label] of options) {
    const option = el('option', null, label);
    option.value = v;
    node.append(option);
  }
  node.value = value || '';
  return node;
}

/** "All" plus one checkbox per choice; `chosen` null (or '*') means all. */
function checkboxes(id, choices, chosen) {
  const box = el('fieldset', 'agent-checks');
  box.id = id;
  const all = chosen == null || chosen === '*';
  const allBox = checkbox('*', 'all', all);
  box.append(allBox.label);
  const names = [...choices];
  for (const name of chosen && chosen !== '*' ? chosen : []) if (!names.includes(name)) names.push(name);
  for (const name of names) {
    const one = checkbox(name, name, !all && chosen.includes(name));
    one.input.disabled = all;
    box.append(one.label);
  }
  allBox.input.addEventListener('change', () => {
    for (const other of box.querySelectorAll('input')) if (other !== allBox.input) other.disabled = allBox.input.checked;
  });
  return box;
}

function checkbox(value, label, checked) {
  const wrap = el('label', 'agent-check');
  const node = el('input');
  node.type = 'checkbox';
  node.value = value;
  node.checked = checked;
  wrap.append(node, el('span', null, label));
  return { label: wrap, input: node };
}

/** The checked values of a checkboxes() set: null when "all" is checked. */
function checked(id) {
  const box = $(`#${id}`);
  if (box.querySelector('input[value="*"]').checked) return null;
  return [...box.querySelectorAll('input:checked')].map((i) => i.value);
}

function modelOptions(current) {
  const options = [['', "the session's model"]];
  for (const h of AG.models.hints) options.push([h.value, h.available ? h.label : `${h.label} (none configured)`]);
  for (const m of AG.models.models) options.push([m.id, m.label]);
  if (current && !options.some(([v]) => v === current)) options.push([current, `${current} (not configured)`]);
  return options;
}

const commaList = (text) => text.split(',').map((s) => s.trim()).filter(Boolean);

function openForm(agent, kind) {
  const slot = $('#agent-form-slot');
  const a = agent || { name: '', description: '', model: null, mode: null, tools: '*', skills: null,
    policy: { allow: ['Patch', 'Finalize'], delegate_targets: null }, work_globs: [], checks: [], prompt: '' };
  AG.form = { kind, agent };
  const form = el('form', 'agent-form');
  form.id = 'agent-form';
  const titles = { create: 'New agent', edit: `Edit ${a.name}`, duplicate: `Duplicate ${a.name}` };
  form.append(el('h3', null, titles[kind]));
  const name = input('agent-name', kind === 'duplicate' ? `${a.name}` : a.name, 'reviewer');
  name.disabled = kind === 'edit';
  form.append(field('Name', name));
  if (kind !== 'edit') {
    form.append(field('Save in', select('agent-scope', [['personal', 'personal ($LINGGEN_HOME/agents)'], ['project', 'project (.linggen/agents)']], 'personal')));
  }
  if (kind !== 'duplicate') appendFieldInputs(form, a);
  form.append(formButtons(kind));
  const error = el('div', 'agents-error');
  error.id = 'agent-error';
  error.hidden = true;
  const warnings = el('ul', 'agents-warnings');
  warnings.id = 'agent-warnings';
  const preview = el('pre', 'agent-preview');
  preview.id = 'agent-preview';
  preview.hidden = true;
  form.append(error, warnings, preview);
  form.addEventListener('submit', (e) => { e.preventDefault(); saveForm(false); });
  slot.replaceChildren(form);
  form.scrollIntoView({ block: 'start' });
}

function appendFieldInputs(form, a) {
  form.append(field('Description', input('agent-description', a.description)));
  form.append(field('Model', select('agent-model', modelOptions(a.model), a.model)));
  form.append(field('Mode', select('agent-mode', [['', 'chat (default)'], ['chat', 'chat'], ['auto', 'auto'], ['talk', 'talk']], a.mode)));
  form.append(field('Tools', checkboxes('agent-tools', AG.data.tools, a.tools)));
  form.append(field('Skills', checkboxes('agent-skills', AG.data.skills.map((s) => s.name), a.skills)));
  const policy = el('fieldset', 'agent-checks');
  policy.id = 'agent-policy';
  for (const cap of AG.data.capabilities) policy.append(checkbox(cap, cap, a.policy.allow.includes(cap)).label);
  form.append(field('Policy', policy));
  form.append(field('Delegates to', input('agent-delegates', (a.policy.delegate_targets || []).join(', '), 'any agent (comma-separated names)')));
  form.append(field('Work globs', input('agent-globs', a.work_globs.join(', '), 'anywhere (comma-separated, e.g. src/**, docs/)')));
  const checks = el('textarea');
  checks.id = 'agent-checks-list';
  checks.rows = 2;
  checks.value = a.checks.join('\n');
  checks.placeholder = 'commands run after each auto-mode patch, one per line';
  form.append(field('Checks', checks));
  const prompt = el('textarea');
  prompt.id = 'agent-prompt';
  prompt.rows = 10;
  prompt.value = a.prompt || '';
  prompt.placeholder = 'The system prompt: who the agent is and how it works.';
  form.append(field('Prompt', prompt));
}

function formButtons(kind) {
  const row = el('div', 'agent-actions');
  const previewButton = button('Preview file', 'agent-preview-button', () => saveForm(true));
  previewButton.id = 'agent-preview-button';
  const save = el('button', 'agent-save', kind === 'duplicate' ? 'Duplicate' : 'Save');
  save.type = 'submit';
  save.id = 'agent-save';
  const cancel = button('Cancel', 'agent-cancel', () => $('#agent-form-slot').replaceChildren());
  row.append(previewButton, save, cancel);
  return row;
}

/** The request body the form stands for. */
function formBody(dryRun) {
  const { kind } = AG.form;
  const body = { dry_run: dryRun, name: $('#agent-name').value.trim() };
  if (kind !== 'edit') body.scope = $('#agent-scope').value;
  if (kind === 'duplicate') return body;
  const allow = [...$('#agent-policy').querySelectorAll('input:checked')].map((i) => i.value);
  const delegates = commaList($('#agent-delegates').value);
  const isDefault = !delegates.length && allow.join() === 'Patch,Finalize';
  Object.assign(body, {
    description: $('#agent-description').value,
    model: $('#agent-model').value || null,
    mode: $('#agent-mode').value || null,
    tools: checked('agent-tools'),
    skills: checked('agent-skills'),
    policy: isDefault ? null : allow,
    delegate_targets: delegates.length ? delegates : null,
    work_globs: commaList($('#agent-globs').value),
    checks: $('#agent-checks-list').value.split('\n').map((s) => s.trim()).filter(Boolean),
    prompt: $('#agent-prompt').value,
  });
  return body;
}

function formPath() {
  const { kind, agent } = AG.form;
  if (kind === 'create') return '/api/agents';
  const name = encodeURIComponent(agent.name);
  return kind === 'edit' ? `/api/agents/${name}` : `/api/agents/${name}/duplicate`;
}

async function saveForm(dryRun) {
  const error = $('#agent-error');
  const preview = $('#agent-preview');
  const warnings = $('#agent-warnings');
  error.hidden = true;
  warnings.replaceChildren();
  let answer;
  try {
    answer = await post(formPath(), formBody(dryRun));
  } catch (err) {
    error.textContent = err.message;
    error.hidden = false;
    return;
  }
  for (const w of answer.warnings || []) warnings.append(el('li', null, w));
  if (answer.trust) warnings.append(el('li', 'agents-trust', answer.trust));
  preview.textContent = `${answer.path}\n\n${answer.text}`;
  preview.hidden = false;
  if (dryRun) return;
  await loadAgents();
  const done = el('p', 'agents-saved', `Saved ${answer.path}.`);
  done.id = 'agent-saved';
  $('#agent-form-slot').replaceChildren(done);
  if (answer.trust) $('#agent-form-slot').append(el('p', 'agents-note', answer.trust));
  for (const w of answer.warnings || []) $('#agent-form-slot').append(el('p', 'agents-error', w));
}

const toggle = typeof document !== 'undefined' && $('#agents-toggle');
if (toggle) toggle.addEventListener('click', toggleAgents);
})();
