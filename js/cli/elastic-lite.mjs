#!/usr/bin/env node
// elastic-lite: checkpoints of Python sessions from the terminal (Node).
//
// One module per command in ./commands/; this file parses the command line, runs the command
// and turns every failure into a one-line message and a meaningful exit code (errors.mjs).
// Stacks are printed only with --debug or ELASTIC_LITE_DEBUG=1.
import { parseArgs } from 'node:util';
import { CliError, EXIT } from './errors.mjs';
import { makeContext, DEFAULT_STORE, jsonState } from './context.mjs';
import { hostReport, problem } from '../shared/report.mjs';

/** The problem code of a failure the CLI itself reports, by exit status (docs/INTERFACES.md). */
const CLI_CODES = { [EXIT.USAGE]: 'usage', [EXIT.NOT_FOUND]: 'not-found', [EXIT.ENV]: 'environment' };
/** The host operation of a command, where its name is not the operation's (its report's `op`). */
const OPS = { ls: 'list', rm: 'delete' };

const COMMANDS = ['run', 'restore', 'ls', 'inspect', 'verify', 'export', 'import', 'rm', 'retention', 'keygen', 'publish'];

const GLOBAL_OPTIONS = {
  store: { type: 'string', arg: 'dir', help: `checkpoint directory (default: ${DEFAULT_STORE}/ in the current directory)` },
  json: { type: 'boolean', help: 'machine-readable JSON on stdout' },
  help: { type: 'boolean', short: 'h', help: 'show help' },
  debug: { type: 'boolean', help: 'print stack traces of errors (also ELASTIC_LITE_DEBUG=1)' },
};

const EXIT_HELP = `Exit codes:
  0  success
  1  the checkpoint is damaged or not a checkpoint; a notebook cell or -c CODE raised;
     restore failed entirely; another process is saving the same checkpoint name
  2  bad command line, or a --store DIR that cannot be written
  3  no such checkpoint, file or notebook
  4  environment problem: Elastic Lite's own files are missing or broken (reinstall the
     elastic-lite package; in a source checkout, run npm run build), or a bug`;

async function loadCommand(name) {
  return (await import(`./commands/${name}.mjs`)).default;
}

function optionLines(options) {
  return Object.entries(options).map(([key, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${key}${o.type === 'string' ? ` ${(o.arg ?? key).toUpperCase()}` : ''}`;
    return `  ${flag.padEnd(26)} ${o.help}`;
  }).join('\n');
}

async function mainHelp() {
  const lines = [];
  for (const name of COMMANDS) lines.push(`  ${name.padEnd(9)} ${(await loadCommand(name)).summary}`);
  return `Usage: elastic-lite COMMAND [options]

Checkpoint and restore Python sessions (Pyodide) from the terminal.

Commands:
${lines.join('\n')}

Options for every command:
${optionLines(GLOBAL_OPTIONS)}

Run "elastic-lite COMMAND --help" for the options of one command.

${EXIT_HELP}
`;
}

function commandHelp(name, cmd) {
  return `Usage: elastic-lite ${cmd.usage}

${cmd.summary[0].toUpperCase()}${cmd.summary.slice(1)}.${cmd.description ? `\n\n${cmd.description}` : ''}
${Object.keys(cmd.options).length ? `\nOptions:\n${optionLines(cmd.options)}\n` : ''}
Options for every command:
${optionLines(GLOBAL_OPTIONS)}

${EXIT_HELP}
`;
}

function debugWanted(argv) {
  return argv.includes('--debug') || ['1', 'true', 'yes'].includes(String(process.env.ELASTIC_LITE_DEBUG ?? '').toLowerCase());
}

function parse(argv, options) {
  const spec = Object.fromEntries(Object.entries(options).map(([k, o]) => [k,
    Object.fromEntries(Object.entries({ type: o.type, short: o.short, multiple: o.multiple }).filter(([, v]) => v !== undefined))]));
  try {
    return parseArgs({ args: argv, options: spec, allowPositionals: true, strict: true });
  } catch (err) {
    if (!String(err.code).startsWith('ERR_PARSE_ARGS')) throw err;
    throw new CliError(err.message.replace(/\. To specify a positional argument.*$/s, '.'), EXIT.USAGE);
  }
}

async function main(argv) {
  const name = argv[0];
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(await mainHelp());
    return name ? EXIT.OK : EXIT.USAGE;
  }
  if (name === '--version') {
    const { readFile } = await import('node:fs/promises');
    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
    process.stdout.write(`elastic-lite ${pkg.version}\n`);
    return EXIT.OK;
  }
  if (!COMMANDS.includes(name)) {
    throw new CliError(`unknown command "${name}"; commands: ${COMMANDS.join(', ')} (see: elastic-lite --help).`, EXIT.USAGE);
  }
  const cmd = await loadCommand(name);
  const { values, positionals } = parse(argv.slice(1), { ...GLOBAL_OPTIONS, ...cmd.options });
  if (values.help) {
    process.stdout.write(commandHelp(name, cmd));
    return EXIT.OK;
  }
  const ctx = makeContext(values, positionals);
  try {
    return (await cmd.run(ctx)) ?? EXIT.OK;
  } finally {
    for (const notice of ctx.storeNotices()) ctx.warn(notice);
  }
}

function report(err, argv) {
  const debug = debugWanted(argv);
  const json = argv.includes('--json');
  let code = EXIT.ENV;
  let message = err && err.message ? err.message : String(err);
  if (err instanceof CliError) {
    code = err.exitCode;
  } else if (!debug) {
    message += ' (run with --debug for details)';
  }
  process.stderr.write(`elastic-lite: ${message.replace(/\s+$/, '')}\n`);
  if (err instanceof CliError && err.details) process.stderr.write(`${err.details.replace(/\s+$/, '')}\n`);
  if (debug && err && err.stack) process.stderr.write(`${err.stack}\n`);
  if (json && !jsonState.emitted) {
    // the report schema with the failure as its one problem (`error`: the message and exit code)
    const failed = hostReport(COMMANDS.includes(argv[0]) ? OPS[argv[0]] ?? argv[0] : null, { ok: false, error: { message, exitCode: code } });
    failed.problems.push(err?.problem ?? problem('failed', message, { code: CLI_CODES[code] ?? 'failed' }));
    process.stdout.write(`${JSON.stringify(failed, null, 2)}\n`);
  }
  return code;
}

const argv = process.argv.slice(2);
let code;
try {
  code = await main(argv);
} catch (err) {
  code = report(err, argv);
}
// Exit explicitly: a Pyodide instance keeps handles that would hold Node open. Flush first.
await new Promise((resolve) => process.stdout.write('', resolve));
await new Promise((resolve) => process.stderr.write('', resolve));
process.exit(code);
