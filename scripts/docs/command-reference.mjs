// The command reference (docs/commands.md) from the commander program: every visible command with its
// usage, description, arguments and options, as `--help` describes them.

import { cell, code, table } from './markdown.mjs';

/** The generated part of docs/commands.md for `program` (buildProgram().program). */
export function commandReference(program) {
  const help = program.createHelp();
  const out = ['## Global options', '', 'Every command takes these (before or after its own).', ''];
  out.push(optionTable(help, program), '');
  out.push(
    '## Commands',
    '',
    table(
      ['command', 'what it does'],
      commands(help, program).map((c) => [`[\`${c.path}\`](#${anchor(c.path)})`, cell(c.cmd.description())]),
    ),
    '',
  );
  for (const { cmd, path } of commands(help, program)) out.push(...section(help, cmd, path));
  return out.join('\n');
}

/** Every visible command under `root`, depth first, with its path after the program's name. */
function commands(help, root, prefix = []) {
  return help
    .visibleCommands(root)
    .filter((c) => c.name() !== 'help')
    .flatMap((cmd) => {
      const names = [...prefix, cmd.name()];
      return [{ cmd, path: [programName(root), ...names].join(' ') }, ...commands(help, cmd, names)];
    });
}

function programName(cmd) {
  let c = cmd;
  while (c.parent) c = c.parent;
  return c.name();
}

function section(help, cmd, path) {
  const out = [`### ${path}`, '', '```', `${path}${usageTail(cmd)}`, '```', ''];
  if (cmd.description()) out.push(cell(cmd.description()), '');
  if (cmd.aliases().length)
    out.push(
      `Also spelled: ${cmd
        .aliases()
        .map((a) => `\`${a}\``)
        .join(', ')}.`,
      '',
    );
  const args = cmd.registeredArguments;
  if (args.length) {
    const rows = args.map((a) => [code(argTerm(a)), cell(help.argumentDescription(a))]);
    out.push(table(['argument', 'description'], rows), '');
  }
  const options = help.visibleOptions(cmd).filter((o) => o.long !== '--help');
  if (options.length) out.push(optionTable(help, cmd), '');
  const subs = help.visibleCommands(cmd).filter((c) => c.name() !== 'help');
  const links = subs.map((c) => `[\`${c.name()}\`](#${anchor(`${path} ${c.name()}`)})`);
  if (links.length) out.push(`Subcommands: ${links.join(', ')}.`, '');
  return out;
}

function optionTable(help, cmd) {
  const options = help.visibleOptions(cmd).filter((o) => o.long !== '--help');
  return table(
    ['option', 'description'],
    options.map((o) => [code(o.flags), cell(help.optionDescription(o))]),
  );
}

/** The usage after the command's path, e.g. " [options] <rollout>". */
function usageTail(cmd) {
  const usage = cmd.usage();
  return usage ? ` ${usage}` : '';
}

function argTerm(a) {
  const name = `${a.name()}${a.variadic ? '...' : ''}`;
  return a.required ? `<${name}>` : `[${name}]`;
}

/** GitHub's heading anchor: lower case, spaces to '-', punctuation dropped. */
function anchor(heading) {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}
