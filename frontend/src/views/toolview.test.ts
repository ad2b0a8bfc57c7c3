// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { processNotices, processNoticesSummary, processNoticesView, toolCall, toolResult } from './toolview';

describe('toolView', () => {
  it('shows a terminal call as its command line, and its result as output with the exit code', () => {
    const call = toolCall('terminal', '{"command":"go test ./...","workdir":"/src","timeout":60}')!;
    expect(call.querySelector('pre')!.textContent).toBe('$ go test ./...');
    expect(call.textContent).toContain('in /src · timeout 60 s');
    const ok = toolResult('terminal', '{"output":"ok  \\tatrium 0.1s","exit_code":0,"error":null}')!;
    expect(ok.querySelector('pre')!.textContent).toBe('ok  \tatrium 0.1s');
    expect(ok.querySelector('[data-testid=tool-status]')!.textContent).toBe('exit 0');
    expect(ok.querySelector('.good')).not.toBeNull();
    const none = toolResult('terminal', '{"output":"","exit_code":1,"error":null,"exit_code_meaning":"No matches found (not an error)"}')!;
    expect(none.textContent).toContain('(no output)');
    expect(none.querySelector('[data-testid=tool-status]')!.textContent).toBe('exit 1 · No matches found (not an error)');
    expect(none.querySelector('.good')).not.toBeNull();
    const failed = toolResult('terminal', '{"output":"x","exit_code":2,"error":null}')!;
    expect(failed.querySelector('.bad')!.textContent).toBe('exit 2');
    expect(failed.querySelector('[data-testid=tool-approval]')).toBeNull();
    const reviewed = toolResult('terminal', '{"output":"","exit_code":0,"error":null,"approval":"Command was flagged (recursive delete) and auto-approved by smart approval."}')!;
    expect(reviewed.querySelector('[data-testid=tool-approval]')!.textContent).toBe('Command was flagged (recursive delete) and auto-approved by smart approval.');
    const blocked = toolResult('terminal', '{"error":"BLOCKED: a person\'s approval is required for this command (recursive delete)"}')!;
    expect(blocked.querySelector('.bad')!.textContent).toContain('BLOCKED');
  });

  it('names the file of a file call, and shows an edit as its diff', () => {
    expect(toolCall('read_file', '{"path":"main.go","offset":10,"limit":20}')!.textContent).toBe('Read main.go (from line 10, 20 lines)');
    expect(toolCall('write_file', '{"path":"a.txt","content":"x\\ny\\n"}')!.textContent).toBe('Write a.txt (3 lines)');
    expect(toolCall('patch', '{"mode":"replace","path":"a.go","old_string":"x","new_string":"y"}')!.textContent).toBe('Edit a.go');
    expect(toolCall('search_files', '{"pattern":"TODO","path":"src","file_glob":"*.ts"}')!.textContent).toBe('Search for TODO in src (*.ts)');
    expect(toolCall('session_search', '{"query":"deploy window"}')!.textContent).toBe('Search past conversations for deploy window');
    expect(toolCall('session_search', '{}')!.textContent).toBe('Browse recent conversations');
    expect(toolCall('session_search', '{"session_id":"s1","around_message_id":42}')!.textContent).toBe('Read around message 42 of s1');
    const diff = toolResult('patch', '{"success":true,"diff":"--- a/a.go\\n+++ b/a.go\\n@@ -1,1 +1,1 @@\\n-x\\n+y\\n"}')!;
    expect(diff.querySelector('.diff-del')!.textContent).toBe('-x\n');
    expect(diff.querySelector('.diff-add')!.textContent).toBe('+y\n');
    expect(toolResult('patch', '{"success":false,"error":"Could not find old_string in a.go"}')!.querySelector('.bad')!.textContent).toContain('Could not find');
  });

  it('shows tasks handed to subagents as their goals, and what each one came back with', () => {
    const one = toolCall('delegate_task', '{"goal":"Run the tests\\nand say which fail","toolsets":["terminal"]}')!;
    expect(one.textContent).toBe('Hand a task to a subagentRun the tests\nand say which failwith terminal');
    const batch = toolCall('delegate_task', '{"goal":"ignored","tasks":[{"goal":"read A"},{"goal":"read B","toolsets":["file"]}]}')!;
    expect(batch.firstChild!.textContent).toBe('Hand 2 tasks to subagents, run together');
    expect([...batch.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['read A', 'read Bwith file']);
    expect(toolCall('delegate_task', '{}')).toBeNull();
    const back = toolResult('delegate_task', JSON.stringify({ results: [
      { task_index: 0, status: 'completed', summary: 'All 12 tests pass.', api_calls: 3, duration_seconds: 4.2, tool_trace: [{ tool: 'terminal' }, { tool: 'read_file' }] },
      { task_index: 1, status: 'timeout', summary: '', duration_seconds: 600, tool_trace: [], error: 'Subagent timed out after 600s.' },
    ], total_duration_seconds: 600.1 }))!;
    const rows = [...back.querySelectorAll('[data-testid=subagent-outcome]')];
    expect(rows.map((r) => r.querySelector('[data-testid=tool-status]')!.textContent)).toEqual(['Done · 4.2 s · 2 tool calls', 'Out of time · 600 s · 0 tool calls']);
    expect(rows[0]!.querySelector('.good')).not.toBeNull();
    expect(rows[0]!.querySelector('.delegate-summary')!.textContent).toBe('All 12 tests pass.');
    expect(rows[1]!.querySelector('.bad')).not.toBeNull();
    expect(rows[1]!.textContent).toContain('Subagent timed out after 600s.');
    const refused = toolResult('delegate_task', '{"error":"Too many tasks: 4 provided, but max_concurrent_children is 3."}')!;
    expect(refused.querySelector('.bad')!.textContent).toContain('Too many tasks');
  });

  it('shows a memory call as the entries it adds, replaces and removes, and its result as its message', () => {
    const one = toolCall('memory', '{"action":"add","target":"user","content":"Prefers metric units"}')!;
    expect(one.textContent).toBe('Memory, USER.md+ Prefers metric units');
    const batch = toolCall('memory', '{"target":"memory","operations":[{"action":"replace","old_text":"pnpm","content":"Uses npm"},{"action":"remove","old_text":"Fridays"}]}')!;
    expect([...batch.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['− pnpm → Uses npm', '− Fridays']);
    expect(batch.textContent).toContain('MEMORY.md');
    const ok = toolResult('memory', '{"success":true,"done":true,"target":"user","usage":"1% — 20/1,375 chars","entry_count":1,"message":"Entry added."}')!;
    expect(ok.querySelector('.good')!.textContent).toBe('Entry added. · 1% — 20/1,375 chars');
    const refused = toolResult('memory', '{"success":false,"error":"Refused: the text matches \'prompt_injection\'."}')!;
    expect(refused.querySelector('.bad')!.textContent).toContain('prompt_injection');
  });

  it('shows a task list as a checklist, steps under their parent', () => {
    expect(toolCall('todo', '{}')!.textContent).toBe('Read the task list');
    expect(toolCall('todo', '{"merge":true,"todos":[{"id":"2","status":"completed"}]}')!.textContent).toBe('Update the task list (1 item)');
    expect(toolCall('todo', '{"todos":[{"id":"1"},{"id":"2"}]}')!.textContent).toBe('Write the task list (2 items)');
    const r = toolResult('todo', JSON.stringify({ todos: [
      { id: '1', content: 'release', status: 'in_progress' },
      { id: '1.1', content: 'changelog', status: 'completed', parent: '1' },
      { id: '2', content: 'announce', status: 'pending' },
    ], revision: 3, summary: { total: 3 } }))!;
    const lis = [...r.querySelectorAll('li')];
    expect(lis.map((li) => li.textContent)).toEqual(['▶ release (in progress)', '☑ changelog (completed)', '☐ announce (pending)']);
    expect(lis[1]!.className).toBe('todo-completed todo-depth-1');
    expect(toolResult('todo', '{"error":"todos must be a list, not a number"}')!.querySelector('.bad')!.textContent).toContain('must be a list');
  });

  it('shows a clarify call as its question and choices, and its result as the answer the person gave', () => {
    const one = toolCall('clarify', '{"question":"Which target?","choices":["staging","prod"],"multi_select":false}')!;
    expect(one.querySelector('q')!.textContent).toBe('Which target?');
    expect([...one.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['staging', 'prod']);
    expect(one.textContent).not.toContain('several');
    expect(toolCall('clarify', '{"question":"Regions?","choices":["eu",{"label":"us"}],"multi_select":true}')!.textContent).toBe('Ask Regions?euusseveral may be picked');
    expect(toolCall('clarify', '{"question":"What should it be called?"}')!.textContent).toBe('Ask What should it be called?an open question');
    const batch = toolCall('clarify', JSON.stringify({ question: 'Setup', questions: [
      { id: 'db', question: 'Which database?', choices: ['postgres', 'sqlite'] },
      'Anything else?',
    ] }))!;
    expect(batch.firstElementChild!.textContent).toBe('Ask 2 questions: Setup');
    const asked = [...batch.querySelectorAll('ol > li')];
    expect(asked.map((li) => li.querySelector('q')!.textContent)).toEqual(['Which database?', 'Anything else?']);
    expect([...asked[0]!.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['postgres', 'sqlite']);
    expect(asked[1]!.textContent).toContain('an open question');
    expect(toolCall('clarify', '{"choices":["a"]}')).toBeNull();

    const answer = (resp: unknown) => toolResult('clarify', JSON.stringify({ question: 'Which target?', choices_offered: ['staging', 'prod'], user_response: resp }))!;
    expect(answer('staging').querySelector('[data-testid=clarify-answer]')!.textContent).toBe('Answer: staging');
    const picks = answer(['eu', 'asia']);
    expect(picks.querySelector('[data-testid=clarify-answer]')!.firstChild!.textContent).toBe('Answer:');
    expect([...picks.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['eu', 'asia']);
    expect(answer('').textContent).toBe('Skipped');
    expect(answer([]).textContent).toBe('Skipped');
    const late = 'The user did not provide a response within the time limit. Use your best judgement to make the choice and proceed.';
    expect(answer(late).textContent).toBe('No answer in time: the agent decided');
    expect(answer([late]).textContent).toBe('No answer in time: the agent decided');

    const rows = toolResult('clarify', JSON.stringify({ responses: [
      { id: 'db', question: 'Which database?', choices_offered: ['postgres', 'sqlite'], user_response: 'postgres' },
      { question: 'Anything else?', choices_offered: null, user_response: '' },
    ] }))!;
    expect([...rows.querySelectorAll('ol > li')].map((li) => li.textContent)).toEqual(['Which database?Answer: postgres', 'Anything else?Skipped']);
    expect(rows.querySelector('[data-testid=tool-status]')).toBeNull();
    const stopped = toolResult('clarify', JSON.stringify({ responses: [
      { question: 'Which database?', choices_offered: null, user_response: 'postgres' },
      { question: 'Anything else?', choices_offered: null, user_response: '' },
    ], timed_out: true }))!;
    expect([...stopped.querySelectorAll('[data-testid=clarify-answer]')].map((a) => a.textContent)).toEqual(['Answer: postgres', 'No answer']);
    expect(stopped.querySelector('[data-testid=tool-status]')!.textContent).toBe('No more answers in time: the agent decided the rest');
    expect(toolResult('clarify', '{"error":"Question text is required."}')!.querySelector('.bad')!.textContent).toBe('Question text is required.');
    expect(toolResult('clarify', '{"something":"else"}')).toBeNull();
  });

  it('shows a web search as its results and a page read by its address, never as links', () => {
    expect(toolCall('web_search', '{"query":"sqlite wal"}')!.textContent).toBe('Search the web for sqlite wal');
    const hits = toolResult('web_search', JSON.stringify({ success: true, data: { web: [
      { title: 'WAL', url: 'https://sqlite.org/wal.html', description: 'Write-ahead log', position: 1 },
      { title: '', url: 'https://x.example/<b>', description: '', position: 2 },
    ] } }))!;
    expect([...hits.querySelectorAll('ol > li')].map((li) => li.textContent)).toEqual(['WAL https://sqlite.org/wal.htmlWrite-ahead log', 'https://x.example/<b> https://x.example/<b>']);
    expect(hits.querySelector('a')).toBeNull();
    expect(hits.querySelector('b')).toBeNull();
    expect(toolResult('web_search', '{"success":true,"data":{"web":[]}}')!.textContent).toBe('No results.');
    expect(toolCall('web_extract', '{"urls":["https://a.example/","https://b.example/"]}')!.querySelectorAll('li').length).toBe(2);
    const pages = toolResult('web_extract', JSON.stringify({ results: [
      { url: 'http://127.0.0.1/', title: '', content: '', error: 'Blocked: URL targets a private or internal network address' },
      { url: 'https://a.example/', title: 'A', content: 'hello', error: null },
    ] }))!;
    expect([...pages.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['http://127.0.0.1/Blocked: URL targets a private or internal network address', 'A https://a.example/5 characters']);
    expect(toolResult('web_extract', '{"error":"Error extracting content: no key"}')!.querySelector('.bad')!.textContent).toBe('Error extracting content: no key');
  });

  it('leaves anything else to the plain view', () => {
    expect(toolCall('echo', '{"text":"hi"}')).toBeNull();
    expect(toolCall('terminal', 'not json')).toBeNull();
    expect(toolCall('terminal', '{"background":true}')).toBeNull();
    expect(toolResult('terminal', '"a string"')).toBeNull();
    expect(toolResult('read_file', '{"content":"1|x","total_lines":1}')).toBeNull();
    expect(toolResult('read_notes', '{"notes":[]}')).toBeNull();
  });

  it('never turns output into markup', () => {
    const r = toolResult('terminal', '{"output":"<img src=x onerror=alert(1)>","exit_code":0}')!;
    expect(r.querySelector('img')).toBeNull();
    expect(r.querySelector('pre')!.textContent).toBe('<img src=x onerror=alert(1)>');
  });
});

describe('processNotices', () => {
  const one = '[IMPORTANT: Background process proc_0a1b completed normally (exit code 0).\nCommand: make test\nOutput:\nok 42 [passed]]';
  const two = '[IMPORTANT: Background process proc_ff exited (exit code -15, SIGTERM).\nCommand: npm run dev\nOutput:\n]';
  const match = '[IMPORTANT: Background process proc_c0 matched watch pattern "listening on".\nCommand: npm run dev\nMatched output:\nlistening on :5173\n(3 earlier matches were suppressed by rate limit)]';
  const off =
    "[IMPORTANT: Watch patterns disabled for process proc_c0 — reached the lifetime cap of 8 delivered matches. Falling back to notify_on_complete semantics; you'll get exactly one notification when the process exits.]";
  const header = '[IMPORTANT: 2 background processes completed. Treat these results as one batch and give one consolidated response; preserve failures and actionable results.]';
  it('reads one end and a batch as Atrium tells them, and nothing else', () => {
    expect(processNotices(one)).toEqual([{ kind: 'end', id: 'proc_0a1b', command: 'make test', code: 0, output: 'ok 42 [passed]' }]);
    const batch = `${header}\n\n${one}\n\n${two}`;
    expect(processNotices(batch)!.map((e) => (e.kind === 'end' ? [e.id, e.code, e.output] : null))).toEqual([
      ['proc_0a1b', 0, 'ok 42 [passed]'],
      ['proc_ff', -15, ''],
    ]);
    expect(processNotices('[IMPORTANT: Background process proc_1 finished]')).toBeNull();
    expect(processNotices(`please read this: ${one}`)).toBeNull();
    expect(processNotices(`[IMPORTANT: 3 background processes completed. x]\n\n${one}\n\n${two}`)).toBeNull();
    expect(processNotices(`${one}\n\n${two}`)).toBeNull(); // two ends come under the header
    expect(processNotices(`${header}\n\n${one}`)).toBeNull();
  });
  it('reads a watched line and what the watch limits did, alone and beside ends', () => {
    expect(processNotices(match)).toEqual([{ kind: 'match', id: 'proc_c0', pattern: 'listening on', command: 'npm run dev', output: 'listening on :5173', suppressed: 3 }]);
    expect(processNotices(match.replace('\n(3 earlier matches were suppressed by rate limit)', ''))![0]).toMatchObject({ output: 'listening on :5173', suppressed: 0 });
    expect(processNotices(off)).toEqual([{ kind: 'note', id: 'proc_c0', text: off.slice('[IMPORTANT: '.length, -1) }]);
    const mixed = processNotices(`${match}\n\n${off}\n\n${header}\n\n${one}\n\n${two}`)!;
    expect(mixed.map((n) => n.kind)).toEqual(['match', 'note', 'end', 'end']);
    expect(processNoticesSummary(mixed)).toBe('2 background processes ended · watched output matched');
    expect(processNoticesSummary(processNotices(off)!)).toBe('background process watch');
    expect(processNotices('[IMPORTANT: Watch-pattern notifications resumed. 2 match event(s) were suppressed during the flood.]')![0]!.kind).toBe('note');
  });
  it('shows each end as finished or failed, its command and the end of its output', () => {
    const v = processNoticesView(processNotices(`[IMPORTANT: 2 background processes completed. Treat them as one.]\n\n${one}\n\n${two}`)!);
    const [first, second, ...rest] = Array.from(v.querySelectorAll('[data-testid=process-end]'));
    expect(rest.length).toBe(0);
    expect(first!.querySelector('.good')!.textContent).toBe('Finished · proc_0a1b');
    expect(Array.from(first!.querySelectorAll('pre'), (p) => p.textContent)).toEqual(['$ make test', 'ok 42 [passed]']);
    expect(second!.querySelector('.bad')!.textContent).toBe('Failed (exit -15) · proc_ff');
    expect(second!.textContent).toContain('(no output)');
  });
  it('shows a watched line with its pattern and command, and the watch notes as text', () => {
    const v = processNoticesView(processNotices(`${match}\n\n${off}`)!);
    const m = v.querySelector('[data-testid=process-match]')!;
    expect(m.querySelector('.tool-status')!.textContent).toBe('Output matched listening on · proc_c0 · still running');
    expect(Array.from(m.querySelectorAll('pre'), (p) => p.textContent)).toEqual(['$ npm run dev', 'listening on :5173']);
    expect(m.textContent).toContain('3 earlier matches were dropped by the rate limit');
    expect(v.querySelector('[data-testid=process-note]')!.textContent).toContain('reached the lifetime cap of 8 delivered matches');
    const hostile = processNoticesView(processNotices(match.replace('listening on :5173', '<img src=x onerror=alert(1)>'))!);
    expect(hostile.querySelector('img')).toBeNull();
  });
});
