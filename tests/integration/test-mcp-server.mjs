// test-mcp-server.mjs — drives `corralctl mcp --local-agent` with the official TypeScript SDK
// client (Client + StdioClientTransport) and checks every tool and some argument validation.
// Usage: node test-mcp-server.mjs NPM_DIR CORRALCTL WORKDIR [VM]. With VM it serves that VM
// (`corralctl mcp VM`; WORKDIR is then a folder in the guest). Prints TAP-like lines; exit 0 = pass.
//
// SPDX-License-Identifier: GPL-3.0-or-later
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDir, corralctl, workdir, vm] = process.argv.slice(2);
const sdk = (rel) => import(pathToFileURL(join(npmDir, 'node_modules/@modelcontextprotocol/sdk/dist/esm', rel)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');

const transport = new StdioClientTransport({
  command: corralctl,
  args: vm ? ['mcp', vm] : ['mcp', '--local-agent'],
  env: { ...process.env },
  stderr: 'inherit',
});
const client = new Client({ name: 'corral-test', version: '1.0.0' });
await client.connect(transport);

let n = 0;
async function check(name, fn) {
  await fn();
  console.log(`ok ${++n} - ${name}`);
}
const text = (result) => result.content.map((c) => c.text).join('\n');
const call = (name, args) => client.callTool({ name, arguments: args });

await check('server info and tools', async () => {
  assert.equal(client.getServerVersion().name, 'corral');
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(),
    ['exec', 'list_dir', 'read_file', 'vm_info', 'write_file']);
});

await check('exec command', async () => {
  const r = await call('exec', { command: 'echo out; echo err >&2; exit 4' });
  assert.match(text(r), /Exit code: 4/);
  assert.match(text(r), /--- stdout ---\nout/);
  assert.match(text(r), /--- stderr ---\nerr/);
  assert.equal(r.structuredContent.exitCode, 4);
});

await check('exec argv and cwd', async () => {
  const r = await call('exec', { argv: ['pwd'], cwd: workdir });
  assert.match(text(r), new RegExp(workdir));
});

await check('exec truncates with a note', async () => {
  const r = await call('exec', { command: 'head -c 300000 /dev/zero | tr "\\0" a' });
  assert.match(text(r), /stdout truncated: 197600 of 300000 bytes cut/);
});

await check('exec timeout', async () => {
  const r = await call('exec', { command: 'sleep 30', timeout: 1 });
  assert.equal(r.isError, true);
  assert.match(text(r), /timed out/);
});

await check('write_file, read_file, list_dir', async () => {
  const path = join(workdir, 'note.txt');
  assert.match(text(await call('write_file', { path, content: 'line one\n' })), /Wrote 9 bytes/);
  await call('write_file', { path, content: 'line two\n', append: true });
  assert.equal(text(await call('read_file', { path })), 'line one\nline two\n');
  assert.match(text(await call('read_file', { path, offset: 5, max_bytes: 3 })), /^one\n\[file truncated/);
  assert.match(text(await call('list_dir', { path: workdir })), /note\.txt\t18/);
});

await check('vm_info', async () => {
  const r = await call('vm_info', {});
  assert.ok(r.structuredContent.kernel);
});

await check('argument validation', async () => {
  const bad = [
    ['exec', {}],
    ['exec', { command: 'true', argv: ['true'] }],
    ['exec', { command: 42 }],
    ['exec', { command: 'true', timeout: 99999 }],
    ['exec', { command: 'true', shell: true }],
    ['read_file', { path: 'relative.txt' }],
    ['read_file', { path: '/x', max_bytes: -1 }],
    ['write_file', { path: join(workdir, 'x') }],
    ['list_dir', { path: ['/'] }],
    ['vm_info', { extra: 1 }],
  ];
  for (const [name, args] of bad) {
    const r = await call(name, args);
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}: ${text(r)}`);
  }
  await assert.rejects(call('no_such_tool', {}), /Unknown tool/);
});

await check('a missing file is a tool error', async () => {
  const r = await call('read_file', { path: join(workdir, 'missing') });
  assert.equal(r.isError, true);
});

await client.close();
console.log(`1..${n}`);
