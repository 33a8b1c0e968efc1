/**
 * What the captured sessions of one gateway collect answered, grouped by the prompt of each chat call (promptKey):
 * the samples agreement counts for a session's last call are every completion of that prompt, its own and these
 * other sessions'. Built only when agreement has a weight.
 */
export class CapturedPeers {
  private readonly byPrompt = new Map<string, { rolloutId: string; completion: string }[]>();

  /** Records a session's calls (a session sampling one prompt several times adds each completion). */
  add(rolloutId: string, turns: readonly { key: string; completion: string }[]): void {
    for (const t of turns) {
      let group = this.byPrompt.get(t.key);
      if (!group) this.byPrompt.set(t.key, (group = []));
      group.push({ rolloutId, completion: t.completion });
    }
  }

  /** The completions other sessions gave to this prompt. */
  of(rolloutId: string, key: string): string[] {
    return (this.byPrompt.get(key) ?? []).filter((c) => c.rolloutId !== rolloutId).map((c) => c.completion);
  }
}
