import { formatDate, parseDate, parseNanos } from './dates';

describe('dates printed and parsed as Elasticsearch 7 java-time formats', () => {
  const t = Date.UTC(2009, 10, 15, 14, 12, 12, 34); // a Sunday

  it('prints the named formats (offsets as Z at UTC), in UTC, a fixed offset and a named zone', () => {
    const cases: Array<[string, string, string, string]> = [
      ['strict_date_optional_time', '2009-11-15T14:12:12.034Z', '2009-11-15T19:42:12.034+05:30', '2009-11-15T09:12:12.034-05:00'],
      ['date_time_no_millis', '2009-11-15T14:12:12Z', '2009-11-15T19:42:12+05:30', '2009-11-15T09:12:12-05:00'],
      ['basic_date_time', '20091115T141212.034Z', '20091115T194212.034+0530', '20091115T091212.034-0500'],
      ['week_date', '2009-W46-7', '2009-W46-7', '2009-W46-7'],
      ['strict_weekyear_week', '2009-W46', '2009-W46', '2009-W46'],
      ['ordinal_date', '2009-319', '2009-319', '2009-319'],
      ['date_hour', '2009-11-15T14', '2009-11-15T19', '2009-11-15T09'],
      ['hour_minute_second_millis', '14:12:12.034', '19:42:12.034', '09:12:12.034'],
      ['t_time_no_millis', 'T14:12:12Z', 'T19:42:12+05:30', 'T09:12:12-05:00'],
      ['epoch_second', '1258294332', '1258294332', '1258294332'],
    ];
    expect(cases.map(([f]) => [f, formatDate(t, f), formatDate(t, f, '+05:30'), formatDate(t, f, 'America/New_York')])).toEqual(cases);
  });

  it('prints pattern letters: ISO day of week (Sunday 7), texts, 12-hour clock, quarters, day of year, week-based year', () => {
    const cases: Array<[string, string]> = [
      ['e', '7'], ['EEE', 'Sun'], ['EEEE', 'Sunday'], ['MMM dd, yyyy', 'Nov 15, 2009'], ['MMMM', 'November'],
      ['hh:mm a', '02:12 PM'], ['k', '14'], ['Q', '4'], ['QQQ', 'Q4'], ['DDD', '319'], ['YYYY-ww', '2009-46'],
      ['yyyy-MM-dd HH:mm:ss.SSSSSS', '2009-11-15 14:12:12.034000'], ["'at' HH 'o''clock'", "at 14 o'clock"], ['xx', '+0000'], ['ZZZZZ', 'Z'],
    ];
    expect(cases.map(([f]) => [f, formatDate(t, f)])).toEqual(cases);
    // 1 January 2010 is a Friday of ISO week 53 of 2009
    expect(formatDate(Date.UTC(2010, 0, 1), "YYYY-'W'ww-e")).toBe('2009-W53-5');
  });

  it('parses week dates, ordinal dates and the basic formats', () => {
    const day = Date.UTC(2009, 10, 15);
    expect(parseDate('2009-W46-7', 'week_date')).toBe(day);
    expect(parseDate('2009W467', 'basic_week_date')).toBe(day);
    expect(parseDate('2009-319', 'ordinal_date')).toBe(day);
    expect(parseDate('2009319', 'strict_basic_ordinal_date')).toBe(day);
    expect(parseDate('2009-W53-5', "YYYY-'W'ww-e")).toBe(Date.UTC(2010, 0, 1));
    expect(parseDate('20091115T141212.034Z', 'basic_date_time')).toBe(t);
    expect(parseDate('2009-11-15T14', 'date_hour')).toBe(Date.UTC(2009, 10, 15, 14));
  });

  it('keeps date_nanos digits below the millisecond: parsed, and printed by epoch_millis and long fractions', () => {
    expect(parseNanos('2018-10-29T12:12:12.123456789Z')).toBe(1540815132123456789n);
    expect(parseNanos('2018-10-29T12:12:12.987Z')).toBe(1540815132987000000n);
    expect(parseNanos('1540815132123.456789', 'epoch_millis')).toBe(1540815132123456789n);
    expect(parseNanos(1540815132123)).toBe(1540815132123000000n);
    const ms = 1540815132123, below = 456789;
    expect(formatDate(ms, 'epoch_millis', undefined, below)).toBe('1540815132123.456789');
    expect(formatDate(ms, 'epoch_millis', undefined, 450000)).toBe('1540815132123.45');
    expect(formatDate(ms, 'strict_date_optional_time', undefined, below)).toBe('2018-10-29T12:12:12.123Z');
    expect(formatDate(ms, "uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSSX", undefined, below)).toBe('2018-10-29T12:12:12.123456789Z');
    expect(formatDate(ms, "uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSSX")).toBe('2018-10-29T12:12:12.123000000Z');
  });
});
