/** An error caused by the user's input or environment: printed without a stack, exit code 2. */
export class UserError extends Error {
  readonly exitCode: number = 2;
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

/** The command ran, but a gate or threshold failed: exit code 1. */
export class GateError extends UserError {
  override readonly exitCode = 1;
  constructor(message: string, hint?: string) {
    super(message, hint);
    this.name = 'GateError';
  }
}

/** Too little data to learn from yet (no examples, too few decisions or tasks): exit 2; a loop stage is skipped. */
export class NotEnoughData extends UserError {
  constructor(message: string, hint?: string) {
    super(message, hint);
    this.name = 'NotEnoughData';
  }
}

/**
 * Whether a learner's failure means "nothing to learn in this cycle": too little data, or data its gates refused.
 * The loop records the stage (or the role) skipped with the reason instead of failing the cycle.
 */
export function isSkip(err: unknown): err is UserError {
  return err instanceof NotEnoughData || err instanceof GateError;
}

export function isUserError(err: unknown): err is UserError {
  return err instanceof UserError;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The user interrupted (Ctrl-C): work stopped cleanly, exit code 130. */
export class InterruptedError extends UserError {
  override readonly exitCode = 130;
  constructor(message = 'interrupted') {
    super(message);
    this.name = 'InterruptedError';
  }
}

/** A write found the disk full: exit 2 with what to do; the command resumes where it stopped once there is room. */
export class DiskFullError extends UserError {
  constructor(where: string, cause: unknown) {
    super(
      `no space left on the disk holding ${where} (${errorMessage(cause)})`,
      'free disk space (`massgen-rl checkpoints prune` removes old checkpoints) and run the command again: it goes on '
        + 'where it stopped',
    );
    this.name = 'DiskFullError';
  }
}
