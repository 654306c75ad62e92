/**
 * Every route the app registers, kept as it is registered. Two things come from it instead of
 * hand-kept tables: each path of the API answers 405 to the methods it has no route for, with
 * an `Allow` header naming those it has; and the routes with the scope each declares can be
 * read back, so that tests derive their authentication matrix from what is registered.
 */
import type { FastifyInstance, RouteOptions } from "fastify";
import { ApiError } from "./errors.js";
import type { Scope } from "./keys.js";

/** What a route asks of a request's key: a scope, or (`key`) only that it is a valid key. */
export type RouteScope = Scope | "key";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The scope an API key needs for the route (`key`: any valid key); a route without one needs no key. */
    scope?: RouteScope;
    /** The route finds the key's tenant in its own query (the lists): the hook only checks the key's form. */
    keyInQuery?: boolean;
    /** What a 405 on the route's path says, instead of `<path> allows <methods>`. */
    refusal?: string;
    /** The route only refuses methods (405). */
    refuses?: boolean;
  }
}

/** The methods a resource may be asked for; a 405 route answers those it does not allow. */
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

export interface BookedRoute {
  method: string;
  url: string;
  scope: RouteScope | undefined;
  /** A 405 route: it refuses every method it answers. */
  refuses: boolean;
}

/**
 * The options of a route answering 405 to every method but `allow` ("GET, HEAD"; "" for none),
 * with those in `Allow`, hidden from the OpenAPI document. It answers on the request, before
 * Fastify reads a body: otherwise a body it could not parse, too large or of another media type
 * would be a 400, 413 or 415 instead.
 */
function methodNotAllowed(allow: readonly string[], detail: string): Omit<RouteOptions, "url"> {
  const refuse = async (): Promise<never> => {
    throw new ApiError("method_not_allowed", detail, {}, { allow: allow.join(", ") });
  };
  return {
    method: HTTP_METHODS.filter((method) => !allow.includes(method)),
    schema: { hide: true },
    config: { refuses: true },
    onRequest: refuse,
    handler: refuse,
  };
}

/**
 * The paths outside /v1 that answer 405 to the methods they have no route for: the health checks
 * and the reference page (whose assets below /docs/ are its plugin's to answer).
 */
const OTHER_PATHS = ["/healthz", "/readyz", "/docs"];

/** The path as the OpenAPI document writes it: `/v1/webhook-endpoints/{id}`. */
const documented = (url: string) => url.replace(/:(\w+)/g, "{$1}");

export class RouteBook {
  private readonly booked: BookedRoute[] = [];
  /** The API's paths (under /v1) and OTHER_PATHS: the methods each has, and its 405's wording. */
  private readonly paths = new Map<string, { methods: Set<string>; refusal: string | undefined }>();

  /** Books every route `app` registers from now on. */
  constructor(app: FastifyInstance) {
    app.addHook("onRoute", (route) => {
      const refuses = route.config?.refuses === true;
      for (const method of [route.method].flat()) {
        this.booked.push({ method, url: route.url, scope: route.config?.scope, refuses });
      }
      if (refuses || !(route.url.startsWith("/v1/") || OTHER_PATHS.includes(route.url))) return;
      const path = this.paths.get(route.url) ?? { methods: new Set<string>(), refusal: undefined };
      for (const method of [route.method].flat()) path.methods.add(method);
      path.refusal ??= route.config?.refusal;
      this.paths.set(route.url, path);
    });
  }

  /** The routes registered so far. */
  get routes(): readonly BookedRoute[] {
    return this.booked;
  }

  /** Registers a 405 on each of those paths, for every method it has no route for. */
  refuseOtherMethods(app: FastifyInstance): void {
    for (const [url, { methods, refusal }] of this.paths) {
      const allow = HTTP_METHODS.filter((method) => methods.has(method));
      app.route({ url, ...methodNotAllowed(allow, refusal ?? `${documented(url)} allows ${allow.join(", ")}`) });
    }
  }
}

/** A path with no route at all: every method is a 405 with an empty `Allow`. */
export function refuseEveryMethod(app: FastifyInstance, url: string, detail: string): void {
  app.route({ url, ...methodNotAllowed([], detail) });
}

declare module "fastify" {
  interface FastifyInstance {
    /** Every route registered, with the scope it needs (see RouteBook). */
    routeBook: RouteBook;
  }
}
