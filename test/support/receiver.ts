/** A webhook receiver on loopback for tests: it records what it receives and answers as told. */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  /** The path and query it was sent to. */
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A receiver on loopback that answers each request with the next of `answers` (then 200). */
export class Receiver {
  readonly received: Received[] = [];
  answers: (number | { status: number; headers?: Record<string, string> } | "hang")[] = [];
  private server: Server | undefined;
  url = "";

  async open(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        this.received.push({ url: req.url ?? "", headers: req.headers, body });
        const answer = this.answers.shift() ?? 200;
        if (answer === "hang") return;
        const { status, headers } = typeof answer === "number" ? { status: answer, headers: {} } : answer;
        res.writeHead(status, headers).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
