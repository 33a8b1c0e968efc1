// The train section's rules live beside its schema; this path stays for the importers outside src/config.
export { machineIssues, sftIssues } from './sections/train.js';
