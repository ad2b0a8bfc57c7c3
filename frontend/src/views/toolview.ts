// toolView shows the machine's tools as a person reads them, rather than
// as the JSON the model reads: a terminal call as the command line it ran,
// its result as the output with its exit code, a file call by its file, an
// edit as its diff, a memory call as the entries it adds and removes, a
// task list as a checklist, a question to the person as the question, its
// choices and the answer given, a web search as its results, a page
// read by its address and size, and tasks handed to subagents as their
// goals and, back, each one's outcome and summary. Anything else (another tool, JSON that does
// not parse) is left to the caller's plain view.
import { h } from '../dom';
import { plural } from '../format';

type Args = Record<string, unknown>;

function parse(text: string): Args | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Args) : null;
  } catch {
    return null;
  }
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** toolCall renders an assistant's call of one of the machine's tools
 * (null: not one, or arguments that do not read). */
export function toolCall(tool: string, content: string): HTMLElement | null {
  const a = parse(content);
  if (!a) return null;
  switch (tool) {
    case 'terminal': {
      if (!str(a.command)) return null;
      const extra = [a.workdir ? `in ${str(a.workdir)}` : '', a.timeout ? `timeout ${String(a.timeout)} s` : ''].filter(Boolean).join(' · ');
      return h(
        'div',
        { class: 'tool-view', 'data-testid': 'tool-call' },
        h('pre', { class: 'tool-command' }, h('span', { class: 'prompt', 'aria-hidden': 'true' }, '$ '), str(a.command)),
        extra ? h('div', { class: 'muted small' }, extra) : null,
      );
    }
    case 'read_file':
    case 'write_file': {
      if (!str(a.path)) return null;
      const what = tool === 'read_file' ? 'Read' : 'Write';
      const range = tool === 'read_file' && (a.offset || a.limit) ? ` (from line ${String(a.offset ?? 1)}${a.limit ? `, ${String(a.limit)} lines` : ''})` : '';
      const size = tool === 'write_file' ? ` (${str(a.content).split('\n').length} lines)` : '';
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, `${what} `, h('code', {}, str(a.path)), range + size);
    }
    case 'patch': {
      if (str(a.mode) === 'patch' || (!a.path && str(a.patch))) {
        return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Apply a patch', h('pre', { class: 'tool-diff' }, ...diffLines(str(a.patch))));
      }
      if (!str(a.path)) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Edit ', h('code', {}, str(a.path)), a.replace_all ? ' (every occurrence)' : '');
    }
    case 'web_search': {
      if (!str(a.query)) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Search the web for ', h('code', {}, str(a.query)));
    }
    case 'web_extract': {
      const urls = Array.isArray(a.urls) ? (a.urls as unknown[]).map(str).filter(Boolean) : [];
      if (!urls.length) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Read from the web', h('ul', { class: 'web-list' }, ...urls.map((u) => h('li', {}, h('code', {}, u)))));
    }
    case 'session_search': {
      if (str(a.session_id) && a.around_message_id !== undefined) {
        return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Read around message ', h('code', {}, String(a.around_message_id)), ' of ', h('code', {}, str(a.session_id)));
      }
      if (str(a.query)) return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Search past conversations for ', h('code', {}, str(a.query)));
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Browse recent conversations');
    }
    case 'memory': {
      const file = str(a.target) === 'user' ? 'USER.md' : 'MEMORY.md';
      const ops = Array.isArray(a.operations) ? (a.operations as unknown[]) : [{ action: a.action, content: a.content, old_text: a.old_text }];
      const lines = ops.map((raw) => memoryOp(raw && typeof raw === 'object' ? (raw as Args) : {}));
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, h('div', {}, 'Memory, ', h('code', {}, file)), h('ul', { class: 'memory-ops' }, ...lines));
    }
    case 'todo': {
      if (!Array.isArray(a.todos) && typeof a.todos !== 'string') return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, 'Read the task list');
      const n = Array.isArray(a.todos) ? a.todos.length : null;
      const what = a.merge === true || a.merge === 'true' ? 'Update the task list' : 'Write the task list';
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, n === null ? what : `${what} (${plural(n, 'item')})`);
    }
    case 'clarify': {
      if (Array.isArray(a.questions) && a.questions.length > 0) {
        const qs = (a.questions as unknown[]).map((q) => (typeof q === 'string' ? { question: q } : q && typeof q === 'object' ? (q as Args) : {}));
        return h(
          'div',
          { class: 'tool-view', 'data-testid': 'tool-call' },
          h('div', {}, `Ask ${plural(qs.length, 'question')}`, str(a.question) ? ': ' : '', str(a.question) ? h('q', {}, str(a.question)) : null),
          h('ol', { class: 'clarify-asked' }, ...qs.map((q) => h('li', {}, ...askedQuestion(q, '')))),
        );
      }
      if (!str(a.question)) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, ...askedQuestion(a, 'Ask '));
    }
    case 'delegate_task': {
      const tasks = Array.isArray(a.tasks) ? (a.tasks as unknown[]).filter((t): t is Args => !!t && typeof t === 'object') : [];
      if (!tasks.length && !str(a.goal)) return null;
      const shown = tasks.length ? tasks : [a];
      const lead = shown.length === 1 ? 'Hand a task to a subagent' : `Hand ${shown.length} tasks to subagents, run together`;
      return h(
        'div',
        { class: 'tool-view', 'data-testid': 'tool-call' },
        h('div', {}, lead),
        h('ol', { class: 'delegate-tasks' }, ...shown.map((t) => h('li', {}, h('div', { class: 'delegate-goal' }, str(t.goal)), toolsetsNote(t.toolsets ?? a.toolsets)))),
      );
    }
    case 'search_files': {
      if (!str(a.pattern)) return null;
      const where = str(a.path) && str(a.path) !== '.' ? ` in ${str(a.path)}` : '';
      const kind = str(a.target) === 'files' ? 'Find files named ' : 'Search for ';
      return h('div', { class: 'tool-view', 'data-testid': 'tool-call' }, kind, h('code', {}, str(a.pattern)), where + (a.file_glob ? ` (${str(a.file_glob)})` : ''));
    }
  }
  return null;
}

/** toolResult renders a result of one of the machine's tools (null: not
 * one, or a result that does not read). */
export function toolResult(tool: string, content: string): HTMLElement | null {
  const r = parse(content);
  if (!r) return null;
  const error = str(r.error);
  switch (tool) {
    case 'terminal': {
      if (!('exit_code' in r) && !error) return null;
      const code = typeof r.exit_code === 'number' ? r.exit_code : null;
      const status = error
        ? h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error)
        : h(
            'div',
            { class: `tool-status ${code === 0 || r.exit_code_meaning ? 'good' : 'bad'}`, 'data-testid': 'tool-status' },
            `exit ${code ?? '?'}`,
            r.exit_code_meaning ? ` · ${str(r.exit_code_meaning)}` : '',
          );
      const out = str(r.output);
      // approvals.mode: smart: the reviewing model let this command run
      const approval = str(r.approval) ? h('div', { class: 'muted small', 'data-testid': 'tool-approval' }, str(r.approval)) : null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, out ? h('pre', { class: 'tool-output' }, out) : h('div', { class: 'muted small' }, '(no output)'), status, approval);
    }
    case 'patch': {
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      if (r.no_change) return h('div', { class: 'tool-view muted', 'data-testid': 'tool-result' }, str(r.note) || 'No change.');
      if (!str(r.diff)) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('pre', { class: 'tool-diff' }, ...diffLines(str(r.diff))));
    }
    case 'web_search': {
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      const data = r.data && typeof r.data === 'object' ? (r.data as Args) : {};
      if (!Array.isArray(data.web)) return null;
      const hits = (data.web as unknown[]).filter((x): x is Args => !!x && typeof x === 'object');
      if (!hits.length) return h('div', { class: 'tool-view muted', 'data-testid': 'tool-result' }, 'No results.');
      // URLs are shown as text, never as links: a click must not take the window to a page a model chose.
      return h(
        'div',
        { class: 'tool-view', 'data-testid': 'tool-result' },
        h('ol', { class: 'web-list' }, ...hits.map((x) => h('li', {}, h('strong', {}, str(x.title) || str(x.url)), ' ', h('code', {}, str(x.url)), str(x.description) ? h('div', { class: 'muted small' }, str(x.description)) : null))),
      );
    }
    case 'web_extract': {
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      if (!Array.isArray(r.results)) return null;
      const pages = (r.results as unknown[]).filter((x): x is Args => !!x && typeof x === 'object');
      return h(
        'div',
        { class: 'tool-view', 'data-testid': 'tool-result' },
        h(
          'ul',
          { class: 'web-list' },
          ...pages.map((p) =>
            h(
              'li',
              {},
              str(p.title) ? h('strong', {}, str(p.title), ' ') : null,
              h('code', {}, str(p.url)),
              str(p.error)
                ? h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, str(p.error))
                : h('div', { class: 'muted small' }, plural(str(p.content).length, 'character')),
            ),
          ),
        ),
      );
    }
    case 'todo': {
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      if (!Array.isArray(r.todos)) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, todoList(r.todos as unknown[]));
    }
    case 'memory': {
      if (r.success === true) {
        return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status good', 'data-testid': 'tool-status' }, [str(r.message), str(r.usage)].filter(Boolean).join(' · ')));
      }
      if (!error) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
    }
    case 'clarify': {
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      if (Array.isArray(r.responses)) {
        const timedOut = r.timed_out === true;
        const rows = (r.responses as unknown[]).filter((x): x is Args => !!x && typeof x === 'object');
        return h(
          'div',
          { class: 'tool-view', 'data-testid': 'tool-result' },
          h('ol', { class: 'clarify-asked' }, ...rows.map((row) => h('li', {}, h('div', {}, h('q', {}, str(row.question))), clarifyAnswer(row.user_response, timedOut)))),
          timedOut ? h('div', { class: 'tool-status', 'data-testid': 'tool-status' }, 'No more answers in time: the agent decided the rest') : null,
        );
      }
      if (!('user_response' in r)) return null;
      return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, clarifyAnswer(r.user_response, false));
    }
    case 'delegate_task': {
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      if (!Array.isArray(r.results)) return null;
      const rows = (r.results as unknown[]).filter((x): x is Args => !!x && typeof x === 'object');
      return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('ol', { class: 'delegate-results' }, ...rows.map(subagentOutcome)));
    }
    case 'read_file':
    case 'write_file':
    case 'search_files':
      if (error) return h('div', { class: 'tool-view', 'data-testid': 'tool-result' }, h('div', { class: 'tool-status bad', 'data-testid': 'tool-status' }, error));
      return null; // their own text reads well enough as it is
  }
  return null;
}

/** subagentStatus words how a subagent ended, by its status (its
 * session's end reason too): error is one that could not be created or
 * whose turn crashed. */
export const subagentStatus: Readonly<Record<string, string>> = {
  completed: 'Done',
  failed: 'Failed',
  interrupted: 'Stopped',
  timeout: 'Out of time',
  error: 'Could not run',
};

/** subagentOutcome is one task's entry of a delegate_task result: how it
 * ended, what it took, its summary and its error. */
function subagentOutcome(row: Args): HTMLElement {
  const status = str(row.status);
  const calls = Array.isArray(row.tool_trace) ? row.tool_trace.length : null;
  const took = [typeof row.duration_seconds === 'number' ? `${row.duration_seconds} s` : '', calls === null ? '' : plural(calls, 'tool call')].filter(Boolean).join(' · ');
  return h(
    'li',
    { 'data-testid': 'subagent-outcome' },
    h('div', { class: `tool-status ${status === 'completed' ? 'good' : 'bad'}`, 'data-testid': 'tool-status' }, subagentStatus[status] ?? status, took ? h('span', { class: 'muted' }, ` · ${took}`) : null),
    str(row.summary) ? h('div', { class: 'delegate-summary' }, str(row.summary)) : null,
    str(row.error) ? h('div', { class: 'muted small' }, str(row.error)) : null,
  );
}

/** toolsetsNote names the toolsets a task was given (null: its parent's). */
function toolsetsNote(v: unknown): HTMLElement | null {
  const names = Array.isArray(v) ? v.map(str).filter(Boolean) : typeof v === 'string' && v ? [v] : [];
  return names.length ? h('div', { class: 'muted small' }, `with ${names.join(', ')}`) : null;
}

/** askedQuestion is one question of a clarify call: its text (after lead)
 * and the choices offered (none: an open question). */
function askedQuestion(q: Args, lead: string): (HTMLElement | null)[] {
  const choices = Array.isArray(q.choices) ? (q.choices as unknown[]).map(choiceText).filter(Boolean) : [];
  return [
    h('div', {}, lead, h('q', {}, str(q.question))),
    choices.length
      ? h('ul', { class: 'clarify-offered' }, ...choices.map((c) => h('li', {}, c)))
      : h('div', { class: 'muted small' }, 'an open question'),
    choices.length && (q.multi_select === true || q.multi_select === 'true') ? h('div', { class: 'muted small' }, 'several may be picked') : null,
  ];
}

/** choiceText is a choice as the clarify tool reads one: text, or an object's label, description, text or title. */
function choiceText(c: unknown): string {
  if (typeof c === 'string') return c.trim();
  if (c && typeof c === 'object') {
    const o = c as Args;
    return [o.label, o.description, o.text, o.title].map(str).find((s) => s.trim())?.trim() ?? '';
  }
  return typeof c === 'number' ? String(c) : '';
}

/** The answer the model reads when the person did not answer in time (the clarify tool's). */
const clarifyTimedOut = 'The user did not provide a response within the time limit. Use your best judgement to make the choice and proceed.';

/** clarifyAnswer is a clarify call's user_response as a person reads it:
 * the answer, the choices picked, skipped, or no answer in time. In a batch
 * that timed out, an empty answer may be a question never reached. */
function clarifyAnswer(resp: unknown, timedOut: boolean): HTMLElement {
  const picks = Array.isArray(resp) ? resp.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))) : null;
  const text = typeof resp === 'string' ? resp : '';
  if (text === clarifyTimedOut || (picks?.length === 1 && picks[0] === clarifyTimedOut)) {
    return h('div', { class: 'clarify-answer muted', 'data-testid': 'clarify-answer' }, 'No answer in time: the agent decided');
  }
  if (picks && picks.length > 0) {
    return h('div', { class: 'clarify-answer', 'data-testid': 'clarify-answer' }, 'Answer:', h('ul', { class: 'clarify-offered' }, ...picks.map((p) => h('li', {}, h('strong', {}, p)))));
  }
  if (text) return h('div', { class: 'clarify-answer', 'data-testid': 'clarify-answer' }, 'Answer: ', h('strong', {}, text));
  return h('div', { class: 'clarify-answer muted', 'data-testid': 'clarify-answer' }, timedOut ? 'No answer' : 'Skipped');
}

const todoMarks: Record<string, string> = { completed: '☑', in_progress: '▶', pending: '☐', cancelled: '☒' };

/** todoList shows a task list as a checklist, each step under its parent. */
function todoList(raw: unknown[]): HTMLElement {
  const items = raw.filter((x): x is Args => !!x && typeof x === 'object').map((x) => ({ id: str(x.id), content: str(x.content), status: str(x.status), parent: str(x.parent) }));
  const ids = new Set(items.map((i) => i.id));
  const depth = (item: (typeof items)[number]): number => {
    let d = 0;
    for (let p = item.parent, seen = new Set<string>(); p && ids.has(p) && !seen.has(p) && d < 8; d++) {
      seen.add(p);
      p = items.find((i) => i.id === p)?.parent ?? '';
    }
    return d;
  };
  const list = h('ul', { class: 'todo-list' });
  if (items.length === 0) return h('div', { class: 'muted small' }, '(the list is empty)');
  for (const item of items) {
    list.append(
      h(
        'li',
        { class: `todo-${item.status} todo-depth-${Math.min(depth(item), 4)}`, 'data-status': item.status },
        h('span', { class: 'todo-mark', 'aria-hidden': 'true' }, `${todoMarks[item.status] ?? '?'} `),
        item.content,
        h('span', { class: 'visually-hidden' }, ` (${item.status.replace('_', ' ')})`),
      ),
    );
  }
  return list;
}

/** memoryOp is one change of a memory call as a line: what it adds, what it replaces with what, what it removes. */
function memoryOp(op: Args): HTMLElement {
  const content = str(op.content);
  const old = str(op.old_text);
  switch (str(op.action)) {
    case 'add':
      return h('li', {}, h('span', { class: 'diff-add' }, '+ '), content);
    case 'replace':
      return h('li', {}, h('span', { class: 'diff-del' }, '− '), h('q', {}, old), h('span', { class: 'diff-add' }, ' → '), content);
    case 'remove':
      return h('li', {}, h('span', { class: 'diff-del' }, '− '), h('q', {}, old));
  }
  return h('li', { class: 'muted' }, `${str(op.action) || '(no action)'} ${content || old}`.trim());
}

/** diffLines marks a unified diff's (or a V4A patch's) added and removed lines. */
function diffLines(diff: string): HTMLElement[] {
  return diff.split('\n').map((line) => {
    let cls = '';
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('***')) cls = 'diff-file';
    else if (line.startsWith('@@')) cls = 'diff-hunk';
    else if (line.startsWith('+')) cls = 'diff-add';
    else if (line.startsWith('-')) cls = 'diff-del';
    return h('span', { class: cls || undefined }, line + '\n');
  });
}

/** ProcessNotice is what Atrium told the model of one of its background
 * processes: its end (terminal's notify_on_complete), a line of its output
 * that matched watch_patterns, or what the watch's limits did. */
export type ProcessNotice =
  | { kind: 'end'; id: string; command: string; code: number; output: string }
  | { kind: 'match'; id: string; command: string; pattern: string; output: string; suppressed: number }
  | { kind: 'note'; id: string; text: string };

const endRE = /^\[IMPORTANT: Background process (proc_[0-9a-f]+) (?:completed normally|exited) \(exit code (-?\d+)(?:, SIGTERM)?\)\.\nCommand: ([^\n]*)\nOutput:\n([\s\S]*)\]$/;
const matchRE = /^\[IMPORTANT: Background process (proc_[0-9a-f]+) matched watch pattern "([^\n]*)"\.\nCommand: ([^\n]*)\nMatched output:\n([\s\S]*?)(?:\n\((\d+) earlier matches were suppressed by rate limit\))?\]$/;
const noteRE = /^\[IMPORTANT: ((?:Watch patterns disabled for process (proc_[0-9a-f]+) — |Watch-pattern overflow: |Watch-pattern notifications resumed\. )[^\n]*)\]$/;
const batchRE = /^\[IMPORTANT: (\d+) background processes completed\. [^\n]*\]$/;

/** processNotices reads a message Atrium wrote to tell the model of its
 * background processes (one notice, or several: ends under the batch
 * header, a watch's notices beside them); null for any other. */
export function processNotices(content: string): ProcessNotice[] | null {
  const parts = content.split('\n\n[IMPORTANT: ').map((p, i) => (i > 0 ? `[IMPORTANT: ${p}` : p));
  let batch = -1;
  const out: ProcessNotice[] = [];
  for (const part of parts) {
    const b = batchRE.exec(part);
    if (b && batch < 0) {
      batch = Number(b[1]);
      continue;
    }
    let m = endRE.exec(part);
    if (m) {
      out.push({ kind: 'end', id: m[1] ?? '', command: m[3] ?? '', code: Number(m[2]), output: m[4] ?? '' });
      continue;
    }
    if ((m = matchRE.exec(part))) {
      out.push({ kind: 'match', id: m[1] ?? '', pattern: m[2] ?? '', command: m[3] ?? '', output: m[4] ?? '', suppressed: Number(m[5] ?? 0) });
      continue;
    }
    if ((m = noteRE.exec(part))) {
      out.push({ kind: 'note', id: m[2] ?? '', text: m[1] ?? '' });
      continue;
    }
    return null;
  }
  const ends = out.filter((n) => n.kind === 'end').length;
  if (out.length === 0 || (batch >= 0 ? batch !== ends || ends < 2 : ends > 1)) return null;
  return out;
}

/** processNoticesSummary is a short label of notices, for a badge. */
export function processNoticesSummary(ns: ProcessNotice[]): string {
  const ends = ns.filter((n) => n.kind === 'end').length;
  const matches = ns.filter((n) => n.kind === 'match').length;
  const parts: string[] = [];
  if (ends) parts.push(ends === 1 ? 'background process ended' : `${ends} background processes ended`);
  if (matches) parts.push(matches === 1 ? 'watched output matched' : `${matches} watched outputs matched`);
  if (!parts.length) parts.push('background process watch');
  return parts.join(' · ');
}

/** processNoticesView shows the notices as a person reads them: which
 * command finished or failed and the end of its output; which watched
 * line came, from which command; what the watch's limits did. */
export function processNoticesView(ns: ProcessNotice[]): HTMLElement {
  return h(
    'div',
    { class: 'tool-view', 'data-testid': 'process-ends' },
    ...ns.map((n) => {
      switch (n.kind) {
        case 'end':
          return h(
            'div',
            { class: 'process-end', 'data-testid': 'process-end' },
            h('div', { class: `tool-status ${n.code === 0 ? 'good' : 'bad'}` }, n.code === 0 ? 'Finished' : `Failed (exit ${n.code})`, h('span', { class: 'muted' }, ` · ${n.id}`)),
            h('pre', { class: 'tool-output' }, `$ ${n.command}`),
            n.output ? h('pre', { class: 'tool-output' }, n.output) : h('div', { class: 'muted small' }, '(no output)'),
          );
        case 'match':
          return h(
            'div',
            { class: 'process-end', 'data-testid': 'process-match' },
            h('div', { class: 'tool-status' }, 'Output matched ', h('q', {}, n.pattern), h('span', { class: 'muted' }, ` · ${n.id} · still running`)),
            h('pre', { class: 'tool-output' }, `$ ${n.command}`),
            h('pre', { class: 'tool-output' }, n.output),
            n.suppressed ? h('div', { class: 'muted small' }, `${n.suppressed} earlier ${n.suppressed === 1 ? 'match was' : 'matches were'} dropped by the rate limit`) : null,
          );
        default:
          return h('div', { class: 'process-end muted', 'data-testid': 'process-note' }, n.text);
      }
    }),
  );
}
