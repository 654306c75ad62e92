/**
 * A deterministic demo data set: one industrial customer's year of PPE and tool dispensing.
 * Used to fill a demo tenant and to exercise lists, filters and paging on realistic volumes,
 * so it deliberately contains accents, odd casing, nulls, late syncs and shared createdAt values.
 */
import type { CollectionName } from "../collections/define.js";

export interface DemoItem {
  record: Record<string, unknown>;
  createdAt: number /* ms since epoch */;
}
export type DemoData = Record<CollectionName, DemoItem[]>;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The site is in Brazil (UTC-3): shifts are local hours, stored times are UTC. */
const SITE_OFFSET = -3 * HOUR;

/** mulberry32: tiny, fast and good enough for demo data; Math.random cannot be seeded. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = ReturnType<typeof mulberry32>;
const int = (r: Rng, min: number, max: number) => min + Math.floor(r() * (max - min + 1));
const pick = <T>(r: Rng, list: readonly T[]): T => list[Math.floor(r() * list.length)] as T;
/** Index skewed towards the start of a list: a few products and people account for most use. */
const skewed = <T>(r: Rng, list: readonly T[], power: number): T => list[Math.floor(list.length * r() ** power)] as T;
const iso = (ms: number) => new Date(ms).toISOString();
const pad = (n: number, width: number) => String(n).padStart(width, "0");

const SECTORS = [
  "Montagem",
  "Soldagem",
  "Logística",
  "Manutenção",
  "Qualidade",
  "Pintura",
  "Expedição",
  "Ferramentaria",
  "Werkzeugbau",
  "Contrôle Qualité",
];
const COST_CENTERS = [
  "Produção Linha 1",
  "Produção Linha 2",
  "Soldagem e Caldeiraria",
  "Logística Interna",
  "Manutenção Industrial",
  "Qualidade e Metrologia",
  "Pintura a pó",
  "Expedição e Embalagem",
  "Ferramentaria Central",
  "Instandhaltung Halle 3",
  "Sécurité du Travail",
  "Administração Fabril",
];
const DEVICES: [string, string | null][] = [
  ["Vending Máquina 01", "Galpão A – Portaria"],
  ["Vending Máquina 02", "Galpão B – Solda"],
  ["Armário Inteligente 01", null],
  ["Werkzeugausgabe Halle 3", "Halle 3, Tor 2"],
  ["Distributeur EPI Bâtiment B", "Bâtiment B – entrée"],
  ["Almoxarifado Ferramentaria", null],
];
/** Ordered by popularity: consumable PPE first, tools (usually returned) from index TOOLS on. */
const PRODUCTS = [
  "Luva de segurança nitrílica",
  "Protetor auricular plug",
  "Luva de vaqueta",
  "Óculos de proteção incolor",
  "Máscara PFF2 sem válvula",
  "Luva anticorte nível 5",
  "Creme de proteção solar FPS 50",
  "Gehörschutz Kapsel",
  "Óculos de proteção fumê",
  "Manga de proteção em raspa",
  "Avental de PVC",
  "Máscara semifacial com filtro",
  "Filtro químico para vapores orgânicos",
  "Capacete classe B",
  "Jugular para capacete",
  "Bota de segurança bico de composite",
  "Botina de segurança com elástico",
  "Sicherheitsschuhe S3",
  "Arbeitshandschuhe Leder",
  "Schutzbrille klar",
  "Gants de manutention",
  "Lunettes de sécurité",
  "Bouchons d'oreille",
  "Casque anti-bruit",
  "Protetor facial incolor",
  "Máscara de solda automática",
  "Luva de raspa para soldador",
  "Perneira de raspa",
  "Cinto de segurança tipo paraquedista",
  "Talabarte duplo com absorvedor",
  "Calça de brim",
  "Camisa manga longa antichama",
  "Colete refletivo",
  "Capa de chuva PVC",
  "Respirador PFF3",
  "Touca descartável",
  "Warnweste orange",
  "Gilet haute visibilité",
  "Protetor auricular tipo concha",
  "Pilhas AA alcalinas",
  "Broca HSS 8 mm",
  "Broca HSS 5 mm",
  "Disco de corte 115 mm",
  "Disco de desbaste 180 mm",
  "Lixa d'água grão 220",
  "Fita isolante 19 mm",
  "Pastilha de metal duro CNMG 120408",
  "Fresa de topo Ø 10 mm",
  "Macho máquina M8",
  "Chave combinada 13 mm",
  "Alicate universal 8 pol",
  "Chave de fenda 1/4 x 6",
  "Trena 5 m",
  "Paquímetro digital 150 mm",
  "Bohrer HSS-G 6,5 mm",
  "Trennscheibe 125 × 1 mm",
  "Drehmomentschlüssel 20–100 Nm",
  "Foret béton 10 mm",
  "Clé à cliquet 1/2",
  "Tournevis cruciforme PH2",
];
const TOOLS = 40;
const FIRST = [
  "João",
  "Ana",
  "Maria",
  "José",
  "Luíza",
  "Antônio",
  "Francisco",
  "Márcia",
  "Conceição",
  "Sebastião",
  "Fábio",
  "Tânia",
  "Cláudio",
  "Letícia",
  "Vinícius",
  "Mônica",
  "André",
  "Patrícia",
  "Rafael",
  "Bárbara",
  "Jürgen",
  "Jörg",
  "Günther",
  "Björn",
  "Käthe",
  "Émile",
  "Hélène",
  "François",
  "Gaëlle",
  "Zoë",
  "Noémie",
  "Raphaël",
  "Thaís",
  "Caio",
  "Bruna",
  "Heloísa",
  "Otávio",
  "Rosângela",
  "Ítalo",
  "Iêda",
];
const LAST = [
  "Silva",
  "Souza",
  "Araújo",
  "Conceição",
  "Gonçalves",
  "Magalhães",
  "Antunes",
  "Simões",
  "Assunção",
  "Brandão",
  "Falcão",
  "Müller",
  "Schäfer",
  "Weiß",
  "Köhler",
  "Groß",
  "Dubois",
  "Lefèvre",
  "Gauthier",
  "Bélanger",
  "Ribeiro",
  "Oliveira",
  "Pereira",
  "Lima",
  "Carvalho",
  "Nogueira",
  "Peixoto",
  "Loureiro",
  "Trindade",
  "Estêvão",
];
const PARTICLES = ["da", "de", "dos", "do"];
const FIXED_NAMES = [
  "João da Silva",
  "Ana Luíza Araújo",
  "Émile Dubois",
  "Jürgen Müller",
  "maria das dores",
  "ÂNGELA SOUZA",
  "Zoë",
  "José dos Santos Filho",
  "Hans-Jürgen von der Heide",
  "Marie-Thérèse de la Fontaine",
];
const REASONS = [
  "Desgaste natural",
  "Luva rasgada",
  "Tamanho errado",
  "Lente riscada",
  "Defeito de fabricação",
  "Verschleiß",
  "Produit endommagé",
  "Contaminado com óleo",
  "Troca por modelo novo",
];
/** Trainings, with the product (index into PRODUCTS) they qualify for, if any. */
const TRAININGS: [string, number | null][] = [
  ["NR-06 Uso de EPI", null],
  ["NR-12 Segurança em máquinas", null],
  ["Trabalho em altura NR-35", 28],
  ["NR-10 Segurança em eletricidade", null],
  ["Proteção respiratória PFF2", 4],
  ["Soldagem segura e máscara automática", 25],
  ["Unterweisung Gehörschutz", 7],
  ["Formation port des EPI", null],
  ["Uso de paquímetro e instrumentos", 53],
  ["Espaço confinado NR-33", 11],
];

interface Employee {
  id: string;
  name: string;
  sectorId: string;
  costCenterId: string;
  device: number;
  weight: number;
}
interface Draft {
  at: number;
  source: string;
  record: Record<string, unknown>;
}
interface Ctx {
  r: Rng;
  now: number;
  start: number;
  products: { id: string; name: string }[];
  deviceIds: string[];
}

/** Master data arrives as a bulk import at the start of the year: chunks share one createdAt. */
function importMaster(records: Record<string, unknown>[], at: number, chunk: number): DemoItem[] {
  return records.map((record, i) => ({ record, createdAt: at + Math.floor(i / chunk) * 1_237 }));
}

function makeName(r: Rng): string {
  const parts = [pick(r, FIRST)];
  if (r() < 0.3) parts.push(pick(r, FIRST));
  if (r() < 0.35) parts.push(pick(r, PARTICLES));
  parts.push(pick(r, LAST));
  if (r() < 0.25) parts.push(pick(r, LAST));
  const name = [...new Set(parts)].join(" ");
  const c = r();
  return c < 0.04 ? name.toLowerCase() : c < 0.07 ? name.toUpperCase() : name;
}

function makeEmployees(r: Rng, count: number, sectorIds: string[], ccIds: string[]) {
  const employees: Employee[] = [];
  const records = [];
  for (let i = 0; i < count; i++) {
    const sector = int(r, 0, sectorIds.length - 1);
    // Cost center mostly follows the sector; some people are charged elsewhere.
    const cc = r() < 0.75 ? sector % ccIds.length : int(r, 0, ccIds.length - 1);
    const emp: Employee = {
      id: `emp-${pad(i + 1, 4)}`,
      name: FIXED_NAMES[i] ?? makeName(r),
      sectorId: sectorIds[sector] as string,
      costCenterId: ccIds[cc] as string,
      device: r() < 0.85 ? sector % DEVICES.length : int(r, 0, DEVICES.length - 1),
      weight: 0,
    };
    const active = r() > 0.08;
    emp.weight = (active ? 1 : 0.3) * (0.2 + r() * 1.8); // heavy and light users; leavers used less
    employees.push(emp);
    const registration = r() < 0.88 ? String(104_200 + i * 17) : null;
    records.push({ id: emp.id, name: emp.name, registration, sectorId: emp.sectorId, costCenterId: emp.costCenterId, active });
  }
  return { employees, records };
}

/** Picks an employee with probability proportional to weight via a cumulative table. */
function weightedPicker(r: Rng, employees: Employee[]): () => Employee {
  const cumulative: number[] = [];
  let total = 0;
  for (const e of employees) cumulative.push((total += e.weight));
  return () => {
    const x = r() * total;
    let lo = 0,
      hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return employees[lo] as Employee;
  };
}

/** A working moment: weekdays mostly, shifts 06–14 and 14–22 peaking at shift start, a few nights. */
function eventTime(c: Ctx, training = false): number {
  for (;;) {
    const day = Math.floor((c.start + SITE_OFFSET) / DAY) + int(c.r, 1, 365);
    const weekday = (day + 4) % 7; // 1970-01-01 was a Thursday
    if (weekday === 0 && c.r() > (training ? 0 : 0.08)) continue;
    if (weekday === 6 && c.r() > (training ? 0 : 0.25)) continue;
    let local: number;
    if (training) local = 8 * HOUR + c.r() * 9 * HOUR;
    else {
      const s = c.r();
      const shiftStart = s < 0.5 ? 6 * HOUR : s < 0.93 ? 14 * HOUR : 22 * HOUR;
      local = shiftStart + (c.r() < 0.35 ? c.r() * HOUR : c.r() * 8 * HOUR);
    }
    const at = day * DAY - SITE_OFFSET + Math.floor(local);
    if (at > c.start + DAY && at <= c.now) return at;
  }
}

/** A device online: seconds to minutes (also the bench's sync workload, bench/dataset.mjs). */
export const quickDelay = (r: Rng) => (r() < 0.7 ? int(r, 1_000, 30_000) : int(r, 30_000, 10 * MINUTE));
/** An offline device: hours to several days, skewed to the short end. */
export const lateDelay = (r: Rng) => Math.floor(HOUR * Math.exp(r() * Math.log(120)));

/**
 * Turns drafts into items with a server createdAt. Per source (device), in event order:
 * rarely an offline episode (about 3 % of records) synced late as one batch; sometimes a small
 * burst sent together; otherwise one by one. Batches share the exact same createdAt.
 */
function sync(c: Ctx, prefix: string, drafts: Draft[], eventField: string): DemoItem[] {
  drafts.sort((a, b) => a.at - b.at);
  drafts.forEach((d, i) => {
    d.record.id = `${prefix}-${pad(i + 1, 8)}`;
    d.record[eventField] = iso(d.at);
  });
  const bySource = new Map<string, Draft[]>();
  for (const d of drafts) {
    const list = bySource.get(d.source);
    if (list) list.push(d);
    else bySource.set(d.source, [d]);
  }
  const items: DemoItem[] = [];
  for (const list of bySource.values()) {
    for (let i = 0; i < list.length; ) {
      const x = c.r();
      const offline = x < 0.0018;
      const first = (list[i] as Draft).at;
      let end = i + (offline ? int(c.r, 5, 30) : x < 0.04 ? int(c.r, 2, 6) : 1);
      // A burst only joins transactions a few minutes apart; an offline episode takes them all.
      if (!offline) for (let j = i + 1; j < end; j++) if ((list[j]?.at ?? Infinity) - first > 10 * MINUTE) end = j;
      const batch = list.slice(i, end);
      const last = (batch[batch.length - 1] as Draft).at;
      const createdAt = Math.min(c.now, last + (offline ? lateDelay(c.r) : quickDelay(c.r)));
      for (const d of batch) items.push({ record: d.record, createdAt });
      i += batch.length;
    }
  }
  return items.sort((a, b) => a.createdAt - b.createdAt || String(a.record.id).localeCompare(String(b.record.id)));
}

/** The fields shared by withdrawals, returns and exchanges, in registry order. */
function transactions(
  c: Ctx,
  count: number,
  nextEmployee: () => Employee,
  product: () => number,
  extra: (p: number) => Record<string, unknown>,
): Draft[] {
  const drafts: Draft[] = [];
  for (let i = 0; i < count; i++) {
    const e = nextEmployee();
    const p = product();
    const prod = c.products[p] as { id: string; name: string };
    const device = c.deviceIds[c.r() < 0.9 ? e.device : int(c.r, 0, c.deviceIds.length - 1)] as string;
    const q = c.r();
    const quantity = q < 0.75 ? 1 : q < 0.93 ? 2 : int(c.r, 3, 10);
    const record = {
      id: "",
      deviceId: device,
      employeeId: e.id,
      employeeName: e.name,
      productId: prod.id,
      productName: prod.name,
      quantity,
      costCenterId: e.costCenterId,
      sectorId: e.sectorId,
      deliveredAt: "",
      ...extra(p),
    };
    drafts.push({ at: eventTime(c), source: device, record });
  }
  return drafts;
}

function trainings(c: Ctx, count: number, nextEmployee: () => Employee): Draft[] {
  const drafts: Draft[] = [];
  for (let i = 0; i < count; i++) {
    const e = nextEmployee();
    const [trainingName, p] = pick(c.r, TRAININGS);
    const at = eventTime(c, true);
    const years = c.r();
    const expires = new Date(at);
    expires.setUTCFullYear(expires.getUTCFullYear() + (years < 0.5 ? 1 : 2));
    const record = {
      id: "",
      employeeId: e.id,
      employeeName: e.name,
      trainingName,
      productId: p === null || c.r() < 0.1 ? null : (c.products[p] as { id: string }).id,
      costCenterId: e.costCenterId,
      sectorId: e.sectorId,
      completedAt: "",
      expiresAt: years < 0.88 ? expires.toISOString() : null,
    };
    drafts.push({ at, source: "lms", record }); // the training system syncs as one source
  }
  return drafts;
}

export function generateDemoData(options: { now: number; seed?: number; scale?: number }): DemoData {
  const { now, seed = 42, scale = 1 } = options;
  const r = mulberry32(seed);
  const start = now - 365 * DAY;
  const count = (base: number) => Math.max(1, Math.round(base * scale));

  const sectors = SECTORS.slice(0, 8).map((name, i) => ({ id: `sec-${pad(i + 1, 2)}`, name }));
  const costCenters = COST_CENTERS.map((name, i) => ({ id: `cc-${1010 + i * 10}`, code: `CC-${1010 + i * 10}`, name }));
  const devices = DEVICES.map(([name, location], i) => ({ id: `dev-${pad(i + 1, 2)}`, name, location }));
  const products = PRODUCTS.map((name, i) => ({
    id: `prd-${pad(i + 1, 4)}`,
    name,
    sku: r() < 0.8 ? `789${pad(1_000_000 + i * 7_919, 10)}` : null,
  }));
  const { employees, records: employeeRecords } = makeEmployees(
    r,
    300,
    sectors.map((s) => s.id),
    costCenters.map((cc) => cc.id),
  );

  const c: Ctx = { r, now, start, products, deviceIds: devices.map((d) => d.id) };
  const nextEmployee = weightedPicker(r, employees);
  const indices = PRODUCTS.map((_, i) => i);
  const popular = () => skewed(r, indices, 2.2);
  // Returns are mostly tools (handed back after use) and sometimes damaged PPE.
  const returnable = () => (r() < 0.7 ? int(r, TOOLS, PRODUCTS.length - 1) : popular());
  const conditions = ["reusable", "reusable", "damaged", "discarded"] as const;

  return {
    withdrawals: sync(
      c,
      "wd",
      transactions(c, count(30_000), nextEmployee, popular, () => ({})),
      "deliveredAt",
    ),
    returns: sync(
      c,
      "rt",
      transactions(c, count(5_000), nextEmployee, returnable, () => ({ condition: r() < 0.85 ? pick(r, conditions) : null })),
      "deliveredAt",
    ),
    exchanges: sync(
      c,
      "ex",
      transactions(c, count(3_000), nextEmployee, popular, (p) => {
        // Usually a worn item swapped for the same product; sometimes for a different one.
        const back = products[r() < 0.85 ? p : popular()] as { id: string; name: string };
        return { returnedProductId: back.id, returnedProductName: back.name, reason: r() < 0.75 ? pick(r, REASONS) : null };
      }),
      "deliveredAt",
    ),
    "training-records": sync(c, "tr", trainings(c, count(2_000), nextEmployee), "completedAt"),
    // Master data: one initial import a few hours into the year, before any transaction.
    sectors: importMaster(sectors, start + HOUR, 50),
    "cost-centers": importMaster(costCenters, start + HOUR + 5 * MINUTE, 50),
    devices: importMaster(devices, start + HOUR + 10 * MINUTE, 50),
    products: importMaster(products, start + 2 * HOUR, 25),
    employees: importMaster(employeeRecords, start + 3 * HOUR, 100),
  };
}
