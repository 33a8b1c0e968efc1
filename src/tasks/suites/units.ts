/** Unit tables for the unit_conversion suite. Factors are exact by definition (international yard and pound, US gallon). */
export interface Unit {
  key: string;
  singular: string;
  plural: string;
  /** How many of the dimension's base unit one of this unit is. */
  toBase: number;
  /** Shown in the prompt when the factor is not common knowledge. */
  hint?: string;
  /** The unit (key) the hint states the factor in. */
  hintTo?: string;
  /** Natural values to convert from. */
  range: [number, number];
}

export type Dimension = 'length' | 'mass' | 'time' | 'volume';

export const LINEAR_UNITS: Record<Dimension, Unit[]> = {
  length: [
    { key: 'mm', singular: 'millimeter', plural: 'millimeters', toBase: 0.001, range: [10, 900] },
    { key: 'cm', singular: 'centimeter', plural: 'centimeters', toBase: 0.01, range: [1, 300] },
    { key: 'm', singular: 'meter', plural: 'meters', toBase: 1, range: [1, 500] },
    { key: 'km', singular: 'kilometer', plural: 'kilometers', toBase: 1000, range: [1, 80] },
    {
      key: 'in',
      singular: 'inch',
      plural: 'inches',
      toBase: 0.0254,
      hint: '1 inch = 2.54 centimeters',
      hintTo: 'cm',
      range: [1, 100],
    },
    {
      key: 'ft',
      singular: 'foot',
      plural: 'feet',
      toBase: 0.3048,
      hint: '1 foot = 0.3048 meters',
      hintTo: 'm',
      range: [1, 100],
    },
    {
      key: 'yd',
      singular: 'yard',
      plural: 'yards',
      toBase: 0.9144,
      hint: '1 yard = 0.9144 meters',
      hintTo: 'm',
      range: [1, 100],
    },
    {
      key: 'mi',
      singular: 'mile',
      plural: 'miles',
      toBase: 1609.344,
      hint: '1 mile = 1.609344 kilometers',
      hintTo: 'km',
      range: [1, 50],
    },
  ],
  mass: [
    { key: 'g', singular: 'gram', plural: 'grams', toBase: 0.001, range: [5, 900] },
    { key: 'kg', singular: 'kilogram', plural: 'kilograms', toBase: 1, range: [1, 120] },
    { key: 't', singular: 'metric ton', plural: 'metric tons', toBase: 1000, range: [1, 20] },
    {
      key: 'lb',
      singular: 'pound',
      plural: 'pounds',
      toBase: 0.45359237,
      hint: '1 pound = 0.45359237 kilograms',
      hintTo: 'kg',
      range: [1, 200],
    },
    {
      key: 'oz',
      singular: 'ounce',
      plural: 'ounces',
      toBase: 0.028349523125,
      hint: '1 ounce = 28.349523125 grams',
      hintTo: 'g',
      range: [1, 64],
    },
  ],
  time: [
    { key: 's', singular: 'second', plural: 'seconds', toBase: 1, range: [10, 900] },
    { key: 'min', singular: 'minute', plural: 'minutes', toBase: 60, range: [1, 600] },
    { key: 'h', singular: 'hour', plural: 'hours', toBase: 3600, range: [1, 72] },
    { key: 'day', singular: 'day', plural: 'days', toBase: 86400, range: [1, 30] },
    { key: 'week', singular: 'week', plural: 'weeks', toBase: 604800, range: [1, 12] },
  ],
  volume: [
    { key: 'mL', singular: 'milliliter', plural: 'milliliters', toBase: 0.001, range: [50, 900] },
    { key: 'L', singular: 'liter', plural: 'liters', toBase: 1, range: [1, 50] },
    {
      key: 'gal',
      singular: 'US gallon',
      plural: 'US gallons',
      toBase: 3.785411784,
      hint: '1 US gallon = 3.785411784 liters',
      hintTo: 'L',
      range: [1, 20],
    },
    {
      key: 'cup',
      singular: 'US cup',
      plural: 'US cups',
      toBase: 0.2365882365,
      hint: '1 US cup = 236.5882365 milliliters',
      hintTo: 'mL',
      range: [1, 16],
    },
  ],
};

export const TEMPERATURE_UNITS: Unit[] = [
  { key: 'C', singular: 'degree Celsius', plural: 'degrees Celsius', toBase: 1, range: [-30, 45] },
  { key: 'F', singular: 'degree Fahrenheit', plural: 'degrees Fahrenheit', toBase: 1, range: [-20, 110] },
  { key: 'K', singular: 'kelvin', plural: 'kelvins', toBase: 1, range: [240, 320] },
];
export const TEMPERATURE_HINT = 'Use °F = °C × 9/5 + 32 and K = °C + 273.15.';

export function convertTemperature(value: number, from: string, to: string): number {
  const c = from === 'C' ? value : from === 'F' ? ((value - 32) * 5) / 9 : value - 273.15;
  return to === 'C' ? c : to === 'F' ? (c * 9) / 5 + 32 : c + 273.15;
}

/** What each dimension's story sentence talks about. */
export const SUBJECTS: Record<Dimension | 'temperature', string> = {
  length: 'A hiking trail is',
  mass: 'A parcel weighs',
  time: 'A task takes',
  volume: 'A container holds',
  temperature: 'A thermometer shows',
};

const named = (value: number, unit: Unit) => `${value} ${value === 1 ? unit.singular : unit.plural}`;

/** The question of each unit_conversion template (temperature uses the first two). */
export function conversionQuestion(
  template: number,
  dimension: Dimension | 'temperature',
  value: number,
  from: Unit,
  to: Unit,
): string {
  return [
    `Convert ${named(value, from)} to ${to.plural}.`,
    `${SUBJECTS[dimension]} ${named(value, from)}. What is that in ${to.plural}?`,
    `How many ${to.plural} are in ${named(value, from)}?`,
  ][template]!;
}
