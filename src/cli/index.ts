import { main } from './main.js';

const code = await main(process.argv);
// Let piped stdout drain before exiting: process.exit would cut a large export short.
process.stdout.write('', () => process.exit(code));
