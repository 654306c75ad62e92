/** Small factories: a valid record of each collection, with overrides. */
let sequence = 0;

function next(prefix: string): string {
  sequence += 1;
  return `${prefix}-${process.pid}-${sequence}`;
}

type Fields = Record<string, unknown>;

export function withdrawal(overrides: Fields = {}): Fields {
  return {
    id: next("wd"),
    deviceId: "dev-1",
    employeeId: "emp-1",
    employeeName: "João da Silva",
    productId: "prd-1",
    productName: "Luva nitrílica",
    quantity: 1,
    costCenterId: "cc-1",
    sectorId: "sec-1",
    deliveredAt: "2026-11-01T08:00:00.000Z",
    ...overrides,
  };
}

export function returnRecord(overrides: Fields = {}): Fields {
  return { ...withdrawal({ id: next("rt") }), condition: "reusable", ...overrides };
}

export function exchange(overrides: Fields = {}): Fields {
  return {
    ...withdrawal({ id: next("ex") }),
    returnedProductId: "prd-2",
    returnedProductName: "Luva gasta",
    reason: "worn out",
    ...overrides,
  };
}

export function trainingRecord(overrides: Fields = {}): Fields {
  return {
    id: next("tr"),
    employeeId: "emp-1",
    employeeName: "João da Silva",
    trainingName: "NR-06 Uso de EPI",
    productId: "prd-1",
    costCenterId: "cc-1",
    sectorId: "sec-1",
    completedAt: "2026-11-01T08:00:00.000Z",
    expiresAt: "2027-11-01T08:00:00.000Z",
    ...overrides,
  };
}

export function employee(overrides: Fields = {}): Fields {
  return {
    id: next("emp"),
    name: "Ana Luíza Araújo",
    registration: "A-100",
    sectorId: "sec-1",
    costCenterId: "cc-1",
    active: true,
    ...overrides,
  };
}

export function costCenter(overrides: Fields = {}): Fields {
  return { id: next("cc"), code: "CC-1010", name: "Montagem", ...overrides };
}

export function sector(overrides: Fields = {}): Fields {
  return { id: next("sec"), name: "Soldagem", ...overrides };
}

export function product(overrides: Fields = {}): Fields {
  return { id: next("prd"), name: "Capacete classe B", sku: "CAP-B", ...overrides };
}

export function device(overrides: Fields = {}): Fields {
  return { id: next("dev"), name: "Vending 01", location: "Hall A", ...overrides };
}

/** A valid record for each collection, by path segment. */
export const FACTORIES: Record<string, (overrides?: Fields) => Fields> = {
  withdrawals: withdrawal,
  returns: returnRecord,
  exchanges: exchange,
  "training-records": trainingRecord,
  employees: employee,
  "cost-centers": costCenter,
  sectors: sector,
  products: product,
  devices: device,
};

export const TRANSACTION_COLLECTIONS = ["withdrawals", "returns", "exchanges", "training-records"];
export const MASTER_COLLECTIONS = ["employees", "cost-centers", "sectors", "products", "devices"];
export const EVENT_FIELD: Record<string, string> = {
  withdrawals: "deliveredAt",
  returns: "deliveredAt",
  exchanges: "deliveredAt",
  "training-records": "completedAt",
};
