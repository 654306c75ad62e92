/** `cribline tenants ...` and `cribline limits ...`: the operator's view of tenants and their rate limits. */
import { InvalidArgumentError, type Command } from "commander";
import type { Config } from "../platform/config.js";
import { formatTime } from "../platform/time.js";
import {
  findTenantBySlug,
  listTenantLimits,
  listTenants,
  setTenantLimits,
  tenantLimits,
  tenantZone,
} from "../tenants/tenant.repository.js";
import { createTenant } from "../tenants/tenant.service.js";
import { out, withStorage } from "./io.js";
import { zoneNamed } from "../platform/zone.js";
import { setTenantZone } from "../usage/usage.repository.js";

/** A rate limit given on the command line: a whole number of requests, or `default` (null). */
function limitValue(raw: string): number | "default" {
  if (raw === "default") return raw;
  if (!/^[1-9]\d{0,8}$/.test(raw)) throw new InvalidArgumentError("must be a whole number from 1 to 999999999, or default");
  return Number(raw);
}

function describeLimits(slug: string, limits: { read: number | null; sync: number | null }, settings: Config): string {
  const { read, sync, windowSeconds } = settings.rateLimits;
  const one = (own: number | null, fallback: number) => (own === null ? `${fallback} (default)` : String(own));
  return `${slug}\tread ${one(limits.read, read)}\tsync ${one(limits.sync, sync)}\tper key every ${windowSeconds} s`;
}

export function addTenantCommands(program: Command, config: () => Config): void {
  const tenants = program.command("tenants").description("manage tenants");
  tenants
    .command("create <slug>")
    .description("create a tenant")
    .action(async (slug: string) =>
      withStorage(config(), async ({ db }) => out(`created tenant "${slug}" (id ${await createTenant(db, slug)})`)),
    );
  tenants
    .command("list")
    .description("list tenants: slug, when created, how many keys and how many of them active")
    .action(async () =>
      withStorage(config(), async ({ db }) => {
        for (const t of await listTenants(db, Date.now())) {
          out([t.slug, formatTime(t.createdAt), `${t.keys} ${t.keys === 1 ? "key" : "keys"}`, `${t.activeKeys} active`].join("\t"));
        }
      }),
    );

  tenants
    .command("zone <slug> [zone]")
    .description("print the tenant's time zone, or set it to an IANA zone (usage reports count days, weeks and months in it; UTC at first)")
    .action(async (slug: string, zone: string | undefined) =>
      withStorage(config(), async ({ db }) => {
        const tenant = await findTenantBySlug(db, slug);
        if (tenant === undefined) throw new InvalidArgumentError(`no tenant "${slug}"`);
        if (zone !== undefined) {
          if (zoneNamed(zone) === undefined) throw new InvalidArgumentError(`"${zone}" is not an IANA time zone (such as Europe/Berlin)`);
          await setTenantZone(db, tenant.id, zone);
        }
        out(`${slug}\t${await tenantZone(db, tenant.id)}`);
      }),
    );

  const limits = program.command("limits").description("per-tenant rate limits (requests per key per window; see the README)");
  limits
    .command("set")
    .description("give a tenant its own limits, or `default` to go back to the deployment's; prints the limits now in force")
    .requiredOption("--tenant <slug>", "the tenant")
    .option("--read <n>", "requests per window of each key, syncs aside, or default", limitValue)
    .option("--sync <n>", "sync requests per window of each key, or default", limitValue)
    .action(async (options: { tenant: string; read?: number | "default"; sync?: number | "default" }) =>
      withStorage(config(), async ({ db }) => {
        if (options.read === undefined && options.sync === undefined) throw new InvalidArgumentError("give --read, --sync or both");
        const tenant = await findTenantBySlug(db, options.tenant);
        if (tenant === undefined) throw new InvalidArgumentError(`no tenant "${options.tenant}"`);
        const current = await tenantLimits(db, tenant.id);
        const given = (value: number | "default" | undefined, now: number | null) =>
          value === undefined ? now : value === "default" ? null : value;
        const next = { read: given(options.read, current.read), sync: given(options.sync, current.sync) };
        await setTenantLimits(db, options.tenant, next);
        out(describeLimits(options.tenant, next, config()));
      }),
    );
  limits
    .command("show")
    .description("the limits each tenant's keys have")
    .option("--tenant <slug>", "only this tenant")
    .action(async (options: { tenant?: string }) =>
      withStorage(config(), async ({ db }) => {
        const tenants = await listTenantLimits(db, options.tenant);
        if (options.tenant !== undefined && tenants.length === 0) throw new InvalidArgumentError(`no tenant "${options.tenant}"`);
        for (const t of tenants) out(describeLimits(t.slug, t, config()));
      }),
    );
}
