/**
 * date_histogram in a named time zone as a plan (libs/es-compat plan-dates.ts `zonedKey`: the
 * executor's `tz_offset(zone, t)` per row), differentially: random instants around daylight-saving
 * changes (fast-check), every answer equal to the aggregation code's over the view (taken with a
 * `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

// Havana and Santiago change at midnight (a local day without its midnight)
const ZONES = ['Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Sao_Paulo', 'Pacific/Chatham', 'America/Havana', 'America/Santiago'];
const histograms = (zone: string) => ({
  d: { date_histogram: { field: 'at', calendar_interval: 'day', time_zone: zone } },
  w: { date_histogram: { field: 'at', calendar_interval: 'week', time_zone: zone, min_doc_count: 1, format: 'yyyy-MM-dd HH:mm' } },
  h: { date_histogram: { field: 'at', calendar_interval: 'hour', time_zone: zone, offset: '+20m', min_doc_count: 1 } },
  f: { date_histogram: { field: 'at', fixed_interval: '90m', time_zone: zone, min_doc_count: 1 }, aggs: { s: { sum: { field: 'x' } } } },
  b: { date_histogram: { field: 'at', fixed_interval: '1d', time_zone: zone, extended_bounds: { min: '2021-03-20', max: '2021-04-10' } } },
  l: { date_histogram: { field: 'at', interval: 'day', time_zone: zone, offset: '-3h', min_doc_count: 1 } },
  m: { date_histogram: { field: 'at', calendar_interval: 'month', time_zone: zone }, aggs: { n: { max: { field: 'x' } } } },
  q: { date_histogram: { field: 'at', calendar_interval: 'quarter', time_zone: zone, offset: '+1d', min_doc_count: 1 } },
  // fixed intervals the aggregation code reads with parseDuration: a number of ms, weeks, decimals
  ms: { date_histogram: { field: 'at', interval: 5400000, time_zone: zone, min_doc_count: 1 } },
  wk: { date_histogram: { field: 'at', fixed_interval: '1w' } },
  dh: { date_histogram: { field: 'at', fixed_interval: '1.5h', min_doc_count: 1, offset: '7m' } },
});
// around the 2021 changes of the zones above (March/April and October/November)
const instant = fc.oneof(fc.integer({ min: Date.UTC(2021, 2, 10), max: Date.UTC(2021, 3, 10) }), fc.integer({ min: Date.UTC(2021, 8, 1), max: Date.UTC(2021, 10, 10) }), fc.integer({ min: Date.UTC(2021, 11, 31, 10), max: Date.UTC(2022, 0, 1, 14) }));

describe('ES date histograms in a named time zone as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random instants around daylight-saving changes: the keys equal the aggregation code', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.record({ at: instant, x: fc.double({ min: -5, max: 5, noNaN: true }) }), { minLength: 1, maxLength: 40 }), fc.constantFrom(...ZONES), async (docs, zone) => {
      const aggs = histograms(zone);
      const c = await EsPlanCheck.fresh(server(), `z${++runs}`, { properties: { at: { type: 'date' }, x: { type: 'double' } } }, docs.map((d, i) => [`d${i}`, d]), aggs);
      // the level's node and one grouped node per histogram
      await c.aggs(aggs, undefined, 12);
      await c.aggs(aggs, { range: { x: { gte: 0 } } }, 12);
    }), { numRuns: 20 });
  }, 300_000);
});
