/** The nine collections cribline stores, declared once. */
import { Type } from "@sinclair/typebox";
import { defineCollection, type Collection, type CollectionName } from "./define.js";
import { DateTime, Id, Text } from "./fields.js";

const transactionFields = {
  deviceId: Id("Device that recorded the transaction."),
  employeeId: Id("Employee who received or handed in the item."),
  employeeName: Text("Employee's name as it was at the event."),
  productId: Id("Product handed out (or handed in, on returns)."),
  productName: Text("Product's name as it was at the event."),
  quantity: Type.Integer({ minimum: 1, maximum: 1_000_000, description: "Units, 1 to 1,000,000." }),
  costCenterId: Id("Cost center charged."),
  sectorId: Id("Employee's sector at the event."),
  deliveredAt: DateTime("When the device delivered the transaction: the event date that the time window matches."),
};

const transaction = {
  kind: "transaction",
  nameField: "employeeName",
  eventField: "deliveredAt",
  relations: ["employeeId", "productId", "costCenterId", "sectorId"],
} as const;

export const withdrawals = defineCollection({
  ...transaction,
  name: "withdrawals",
  singular: "withdrawal",
  description: "An item taken from a device by an employee.",
  fields: transactionFields,
});

export const returns = defineCollection({
  ...transaction,
  name: "returns",
  singular: "return",
  description: "An item handed back to a device.",
  fields: {
    ...transactionFields,
    condition: Type.Union([Type.Literal("reusable"), Type.Literal("damaged"), Type.Literal("discarded")], {
      description: "State of the returned item.",
    }),
  },
  optional: ["condition"],
});

export const exchanges = defineCollection({
  ...transaction,
  name: "exchanges",
  singular: "exchange",
  description: "An item handed out in exchange for one handed back; `productId` is the item handed out.",
  fields: {
    ...transactionFields,
    returnedProductId: Id("Product handed back."),
    returnedProductName: Text("Name of the product handed back, as it was at the event."),
    reason: Text("Why the item was exchanged.", 500),
  },
  optional: ["reason"],
});

export const trainingRecords = defineCollection({
  ...transaction,
  name: "training-records",
  singular: "training-record",
  description: "A training an employee completed.",
  eventField: "completedAt",
  fields: {
    employeeId: Id("Employee who completed the training."),
    employeeName: Text("Employee's name as it was at completion."),
    trainingName: Text("Name of the training."),
    productId: Id("Product the training qualifies the employee for."),
    costCenterId: Id("Employee's cost center at completion."),
    sectorId: Id("Employee's sector at completion."),
    completedAt: DateTime("When the training was completed: the event date that the time window matches."),
    expiresAt: DateTime("When the qualification expires."),
  },
  optional: ["productId", "expiresAt"],
});

export const employees = defineCollection({
  name: "employees",
  singular: "employee",
  kind: "master",
  description: "A person who may use the devices; owned by the customer's HR system.",
  fields: {
    name: Text("Full name."),
    registration: Text("Badge or payroll number.", 64),
    sectorId: Id("Sector the employee works in."),
    costCenterId: Id("Cost center the employee is charged to."),
    active: Type.Boolean({ description: "False once the employee may no longer withdraw items." }),
  },
  optional: ["registration"],
  nameField: "name",
  relations: ["sectorId", "costCenterId"],
});

export const costCenters = defineCollection({
  name: "cost-centers",
  singular: "cost-center",
  kind: "master",
  description: "A cost center from the customer's ERP.",
  fields: { code: Text("Cost center code.", 64), name: Text("Cost center name.") },
  nameField: "name",
  codeField: "code",
  relations: [],
});

const simpleMaster = (name: CollectionName, singular: string, description: string, extra: string, extraDoc: string) =>
  defineCollection({
    name,
    singular,
    kind: "master",
    description,
    fields: { name: Text("Name."), [extra]: Text(extraDoc) },
    optional: [extra],
    nameField: "name",
    relations: [],
  });

export const sectors = defineCollection({
  name: "sectors",
  singular: "sector",
  kind: "master",
  description: "A sector (department, area) of the customer's site.",
  fields: { name: Text("Name.") },
  nameField: "name",
  relations: [],
});

export const products = simpleMaster("products", "product", "An item of the product catalogue.", "sku", "Stock keeping unit.");
export const devices = simpleMaster(
  "devices",
  "device",
  "A dispensing device: vending machine, locker or tool crib.",
  "location",
  "Where the device stands.",
);

export const COLLECTIONS: readonly Collection[] = [
  withdrawals,
  returns,
  exchanges,
  trainingRecords,
  employees,
  costCenters,
  sectors,
  products,
  devices,
];

export function findCollection(name: string): Collection | undefined {
  return COLLECTIONS.find((c) => c.name === name);
}
