import { input, number, select } from '@inquirer/prompts';

export { input, number, select };
