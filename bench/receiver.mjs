/**
 * Webhook receivers for the webhook scenarios, run by bench/webhooks.mjs as a child process
 * (forked, with an IPC channel) so that their request handling shares neither the driver's
 * event loop nor its timing. It listens on `argv[2]` loopback ports, one per endpoint, and
 * answers every POST 200 at once, before reading its body: a receiver that costs nothing.
 *
 * Each event is stamped with `Date.now()` when its request arrives (the system clock, which
 * the driver stamps sync acknowledgements with too) and kept as
 * { receiver, id: data.id, webhookId, at } until the parent sends "take", which is answered
 * with everything kept since the last take. The first message sent is { urls: [...] }.
 */
import http from "node:http";

const count = Number(process.argv[2]);
if (!Number.isInteger(count) || count < 1) throw new Error("bench/receiver.mjs needs the number of receivers");

let arrivals = [];
let malformed = 0;

function receiver(index) {
  return http.createServer((request, response) => {
    const at = Date.now();
    response.writeHead(200).end();
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      try {
        const id = JSON.parse(Buffer.concat(chunks).toString("utf8")).data.id;
        arrivals.push({ receiver: index, id, webhookId: request.headers["webhook-id"], at });
      } catch {
        malformed++;
      }
    });
  });
}

const servers = Array.from({ length: count }, (_, index) => receiver(index));
const urls = await Promise.all(
  servers.map(
    (server) => new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${server.address().port}/hook`))),
  ),
);
process.send({ urls });

process.on("message", (message) => {
  if (message !== "take") return;
  process.send({ arrivals, malformed });
  arrivals = [];
  malformed = 0;
});
// The parent going away (or disconnecting to stop it) ends the receivers.
process.on("disconnect", () => process.exit(0));
