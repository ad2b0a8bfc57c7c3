#!/usr/bin/env node
// The dashboard refuses writes from another origin: a real `atrium serve`,
// Debian's chromium holding the dashboard's cookie, and a hostile page
// served from a second loopback origin (another port of 127.0.0.1, which
// gets the SameSite cookie) that tries to archive a session, enable a
// plugin and install one. Nothing may change; the dashboard's own page
// still writes.
//
//   node e2e/cross-origin.mjs /path/to/atrium
//
// One line per check, then "N passed, M failed"; exit 1 if any failed.

import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

const run = promisify(execFile);
const bin = process.argv[2] ? resolve(process.argv[2]) : '';
if (!bin) {
  console.error('usage: node e2e/cross-origin.mjs /path/to/atrium');
  process.exit(2);
}
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const home = mkdtempSync(join(tmpdir(), 'atrium-xo-'));
let passed = 0;
let failed = 0;
let server = null;
let serverLog = '';
let browser = null;
let hostile = null;

async function atrium(...args) {
  const { stdout } = await run(bin, ['--home', home, ...args, '--json'], { env: { ...process.env, ATRIUM_HOME: home } });
  return JSON.parse(stdout);
}

async function check(name, fn) {
  const t0 = Date.now();
  try {
    const detail = await fn();
    passed++;
    console.log(`ok    ${name}${detail ? ` — ${detail}` : ''} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL  ${name}: ${(e && e.message) || e}`.split('\n').slice(0, 6).join('\n      '));
  }
}

function eq(got, want, what) {
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

function startServer() {
  return new Promise((res, rej) => {
    server = spawn(bin, ['--home', home, 'serve', '--addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ATRIUM_HOME: home } });
    const timer = setTimeout(() => rej(new Error(`no link printed in 20 s:\n${serverLog}`)), 20_000);
    const onData = (c) => {
      serverLog += c.toString();
      const m = serverLog.match(/(http:\/\/[^\s/]+)\/\?token=([0-9a-zA-Z]+)/);
      if (m) {
        clearTimeout(timer);
        res({ link: m[0], base: m[1] });
      }
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', (c) => (serverLog += c.toString()));
    server.on('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`atrium serve exited with ${code}:\n${serverLog}`));
    });
  });
}

async function stopServer() {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  const t = setTimeout(() => server.exitCode === null && server.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

/** serveHostile serves one page on another loopback port. */
function serveHostile(html) {
  return new Promise((res) => {
    hostile = createServer((req, rsp) => {
      rsp.writeHead(200, { 'Content-Type': 'text/html' });
      rsp.end(html);
    });
    hostile.listen(0, '127.0.0.1', () => res(`http://127.0.0.1:${hostile.address().port}`));
  });
}

async function main() {
  const victim = (await atrium('sessions', 'create', '--title', 'Do not archive me')).id;
  const mine = (await atrium('sessions', 'create', '--title', 'Archive me from the dashboard')).id;
  const pluginDir = join(home, 'src-plugin');
  mkdirSync(pluginDir, { recursive: true });
  writeFileSync(join(pluginDir, 'plugin.yaml'), 'name: dropped\nruntime: command\ncommand: [./run.sh]\n');
  writeFileSync(join(pluginDir, 'run.sh'), '#!/bin/sh\ntouch "$ATRIUM_PLUGIN_DIR/../../RAN"\n', { mode: 0o755 });

  const { link, base } = await startServer();
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(link); // sets the SameSite cookie for 127.0.0.1
  const cookies = await context.cookies(base);
  eq(cookies.map((c) => c.name), ['atrium_token'], 'the dashboard cookie');

  // The hostile page: every way a page can post without reading the answer.
  const archive = JSON.stringify({ request_id: 'evil-1', ids: [victim] });
  const install = JSON.stringify({ source: pluginDir });
  const origin = await serveHostile(`<!doctype html><title>hostile</title>
<form id=f method=POST action="${base}/api/sessions/archive" enctype="text/plain" target=sink>
<input name='{"request_id":"evil-form","ids":["${victim}"],"pad":"' value='"}'></form>
<iframe name=sink></iframe>
<script>
const post = (path, body, type) => fetch(${JSON.stringify(base)} + path, { method: 'POST', mode: 'no-cors', credentials: 'include',
  headers: type ? { 'Content-Type': type } : {}, body }).then(() => 'sent', (e) => 'error ' + e);
window.attack = async () => [
  await post('/api/sessions/archive', ${JSON.stringify(archive)}, 'text/plain'),
  await post('/api/plugins/install', ${JSON.stringify(install)}, 'text/plain'),
  await post('/api/plugins/hook-audit/enable', undefined, undefined),
  await post('/api/plugins/reload', '', 'text/plain'),
];
</script>`);

  const refused = [];
  const attacker = await context.newPage();
  attacker.on('response', (r) => {
    if (r.url().startsWith(base + '/api/')) refused.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`);
  });

  await check('a page on another loopback origin cannot archive, install or enable (403)', async () => {
    await attacker.goto(origin + '/');
    const sent = await attacker.evaluate(() => window.attack());
    eq(sent, ['sent', 'sent', 'sent', 'sent'], 'requests sent by the browser');
    await Promise.all([attacker.waitForResponse((r) => r.url().endsWith('/api/sessions/archive') && r.request().postData()?.includes('evil-form')), attacker.evaluate(() => document.getElementById('f').submit())]);
    const statuses = refused.map((s) => s.split(' ').pop());
    if (refused.length < 5 || statuses.some((s) => s !== '403')) throw new Error(`responses: ${JSON.stringify(refused)}`);
    return refused.join(', ');
  });

  await check('nothing changed: the session is live, no plugin installed or enabled, no hook fired', async () => {
    const archived = await atrium('sessions', 'list', '--archived');
    eq((archived.sessions || archived).map?.((s) => s.id) ?? [], [], 'archived sessions');
    const plugins = await atrium('plugins', 'list');
    const byName = Object.fromEntries((plugins.plugins || plugins).map((p) => [p.name, p]));
    eq(byName.dropped, undefined, 'installed plugin');
    eq(byName['hook-audit'].enabled, false, 'hook-audit enabled');
    const events = await atrium('events', 'list');
    eq(events.length, 0, 'hook events');
  });

  await check("the dashboard's own page still writes (same origin, JSON)", async () => {
    const got = await page.evaluate(async ([id]) => {
      const r = await fetch('/api/sessions/archive', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ request_id: 'own-1', ids: [id] }) });
      return { status: r.status, body: await r.json() };
    }, [mine]);
    eq(got.status, 200, 'status');
    eq(got.body.affected_ids, [mine], 'archived');
  });
}

let crashed = null;
try {
  await main();
} catch (e) {
  crashed = e;
  failed++;
  console.log(`FAIL  setup: ${(e && e.stack) || e}`);
} finally {
  try {
    if (browser) await browser.close();
  } catch {
    /* already gone */
  }
  if (hostile) hostile.close();
  await stopServer();
  if (failed > 0 && serverLog) console.log(`--- atrium serve output ---\n${serverLog.trim().split('\n').slice(-20).join('\n')}`);
  rmSync(home, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || crashed ? 1 : 0);
