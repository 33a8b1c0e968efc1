import type { Command } from 'commander';
import type { Context } from './context.js';

/** How a command file adds itself to the program: its flags, and an action that calls the pipeline. */
export type Register = (program: Command, ctx: () => Context) => void;
