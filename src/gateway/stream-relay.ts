import { createParser, type EventSourceParser } from 'eventsource-parser';
import type http from 'node:http';
import { CompletionStream } from '../llm/completion-stream.js';
import type { BodyFlow, BodySink } from '../llm/http.js';
import type { ClientRequest } from './request.js';
import { needsStrip, strip } from './strip.js';

/**
 * A backend's event stream relayed to the client as it arrives, each read of bytes written on at once:
 * unchanged when the client asked for everything the gateway added, else event by event with the
 * additions removed. The whole stream is also assembled (CompletionStream) for the captured span.
 */
export class StreamRelay {
  readonly completion = new CompletionStream();
  /** The client's response has begun: the request can no longer be retried or answered with an error status. */
  started = false;
  private paused = false;
  private readonly events: EventSourceParser | undefined;

  constructor(
    private readonly res: http.ServerResponse,
    private readonly wants: ClientRequest['wants'],
  ) {
    this.events = needsStrip(wants, true) ? createParser({ onEvent: (e) => this.event(e.data) }) : undefined;
  }

  private flow: BodyFlow | undefined;

  readonly sink: BodySink = (status, headers, flow) => {
    const assemble = this.completion.sink(status, headers);
    if (!assemble) return undefined;
    this.started = true;
    this.flow = flow;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    this.res.flushHeaders();
    const decoder = new TextDecoder();
    return (bytes) => {
      if (this.events) this.events.feed(decoder.decode(bytes, { stream: true }));
      else this.write(bytes);
      assemble(bytes);
    };
  };

  /** Ends the client's stream (a cut-off backend stream ends it as it was: the client sees no [DONE]). */
  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  /** A client that reads slower than the backend writes holds the backend back, not the gateway's memory. */
  private write(bytes: Buffer | string): void {
    if (this.res.write(bytes) || this.paused) return;
    this.paused = true;
    this.flow?.pause();
    this.res.once('drain', () => {
      this.paused = false;
      this.flow?.resume();
    });
  }

  private event(data: string): void {
    if (data === '[DONE]') {
      this.write('data: [DONE]\n\n');
      return;
    }
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(data) as Record<string, unknown>;
    } catch {
      this.write(`data: ${data}\n\n`);
      return;
    }
    if (strip(chunk, this.wants, true)) this.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
}
