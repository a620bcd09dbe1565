// postgres_changes filters: `column=op.value`, several joined by commas (all must hold), with the
// operators Supabase Realtime accepts: eq, neq, lt, lte, gt, gte, in (`in.(a,b,"c,d")`). Values
// compare by the column's type: numbers as numbers, booleans as booleans, everything else as text.

export type FilterOperator = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte' | 'in';

export interface ColumnFilter {
  column: string;
  operator: FilterOperator;
  values: string[];
}

export class FilterError extends Error {
  override name = 'FilterError';
}

const OPERATORS = new Set<FilterOperator>(['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in']);
const NUMERIC_TYPES = new Set(['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'oid']);

/** Splits on commas outside parentheses and double quotes. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let current = '';
  for (const character of text) {
    if (character === '"') quoted = !quoted;
    else if (!quoted && character === '(') depth += 1;
    else if (!quoted && character === ')') depth -= 1;
    if (character === ',' && depth === 0 && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += character;
    }
  }
  parts.push(current);
  return parts;
}

function parseInList(text: string): string[] {
  if (!text.startsWith('(') || !text.endsWith(')')) {
    throw new FilterError('an in filter lists its values as in.(a,b)');
  }
  return splitTopLevel(text.slice(1, -1)).map((value) => {
    const trimmed = value.trim();
    return trimmed.startsWith('"') && trimmed.endsWith('"') ? trimmed.slice(1, -1) : trimmed;
  });
}

export function parseFilters(filter: string | null | undefined): ColumnFilter[] {
  if (!filter) return [];
  return splitTopLevel(filter).map((part) => {
    const match = /^([^=]+)=([a-z]+)\.(.*)$/s.exec(part.trim());
    if (!match) throw new FilterError(`expected column=operator.value, got "${part}"`);
    const [, column, operator, value] = match as unknown as [string, string, string, string];
    if (!OPERATORS.has(operator as FilterOperator)) {
      throw new FilterError(`operator "${operator}" is not one of eq, neq, lt, lte, gt, gte, in`);
    }
    return {
      column: column.trim(),
      operator: operator as FilterOperator,
      values: operator === 'in' ? parseInList(value) : [value],
    };
  });
}

function compare(recordValue: unknown, filterValue: string, type: string | undefined): number {
  if (type && NUMERIC_TYPES.has(type)) {
    return Math.sign(Number(recordValue) - Number(filterValue));
  }
  if (type === 'bool') {
    const left = recordValue === true || recordValue === 't' || recordValue === 'true';
    const right = filterValue === 't' || filterValue === 'true';
    return left === right ? 0 : left ? 1 : -1;
  }
  const left = typeof recordValue === 'string' ? recordValue : JSON.stringify(recordValue);
  return left === filterValue ? 0 : left < filterValue ? -1 : 1;
}

/** True when `record` passes every filter; a null or missing column passes none. */
export function matchesFilters(
  filters: ColumnFilter[],
  record: Record<string, unknown>,
  typeOf: (column: string) => string | undefined,
): boolean {
  return filters.every((filter) => {
    const value = record[filter.column];
    if (value === null || value === undefined) return false;
    const type = typeOf(filter.column);
    const [first] = filter.values as [string];
    switch (filter.operator) {
      case 'eq':
        return compare(value, first, type) === 0;
      case 'neq':
        return compare(value, first, type) !== 0;
      case 'lt':
        return compare(value, first, type) < 0;
      case 'lte':
        return compare(value, first, type) <= 0;
      case 'gt':
        return compare(value, first, type) > 0;
      case 'gte':
        return compare(value, first, type) >= 0;
      case 'in':
        return filter.values.some((candidate) => compare(value, candidate, type) === 0);
    }
    return false;
  });
}
