import fs from 'node:fs';
import path from 'node:path';

/** Whether two paths name the same file or folder (symlinks followed; an empty path matches nothing). */
export function samePath(a: string, b: string): boolean {
  if (!a || !b) return false;
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}
