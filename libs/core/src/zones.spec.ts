import { calendarFloor, zoneOffsetMs } from './zones';

/** Intl's answer without the per-hour cache. */
function direct(zone: string, utc: number): number {
  const f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const p = Object.fromEntries(f.formatToParts(new Date(utc)).map((x) => [x.type, x.value]));
  return Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour) % 24, Number(p.minute), Number(p.second)) - Math.floor(utc / 1000) * 1000;
}

describe('zoneOffsetMs', () => {
  it('fixed offsets and UTC', () => {
    expect(zoneOffsetMs(undefined, 0)).toBe(0);
    expect(zoneOffsetMs('Z', 5)).toBe(0);
    expect(zoneOffsetMs('+05:30', 0)).toBe(19_800_000);
    expect(zoneOffsetMs('-0800', 0)).toBe(-28_800_000);
    expect(zoneOffsetMs('Nowhere/Atlantis', 0)).toBeNull();
    expect(zoneOffsetMs('Europe/Paris', NaN)).toBeNull();
  });

  it('equals Intl at every instant, across daylight-saving changes and historic offsets (the hour cache)', () => {
    let seed = 42;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    for (const zone of ['Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'America/Havana', 'Pacific/Chatham', 'Asia/Kolkata']) {
      // the 2021 spring change of Paris, second by second around it, then random instants from 1850 on
      for (let t = Date.UTC(2021, 2, 28, 0, 59, 50); t < Date.UTC(2021, 2, 28, 1, 0, 10); t += 1000) expect(zoneOffsetMs(zone, t)).toBe(direct(zone, t));
      for (let i = 0; i < 400; i++) {
        const t = Math.floor(-3.8e12 + rnd() * 6e12);
        expect([zone, t, zoneOffsetMs(zone, t)]).toEqual([zone, t, direct(zone, t)]);
      }
    }
  });
});

describe('calendarFloor', () => {
  it('the local unit\'s start back in UTC', () => {
    expect(calendarFloor(Date.UTC(2021, 2, 28, 12), 'M', 'Europe/Paris')).toBe(Date.UTC(2021, 1, 28, 23)); // 1 March, CET
    expect(calendarFloor(Date.UTC(2021, 2, 28, 12), 'd', 'Europe/Paris')).toBe(Date.UTC(2021, 2, 27, 23)); // that day began in CET
    expect(calendarFloor(Date.UTC(2021, 7, 15, 3), 'q', 'America/New_York')).toBe(Date.UTC(2021, 6, 1, 4)); // 1 July, EDT
    expect(calendarFloor(Date.UTC(2021, 0, 7, 5), 'w')).toBe(Date.UTC(2021, 0, 4)); // Monday
    expect(calendarFloor(Date.UTC(2021, 0, 7, 5, 6, 7, 8), 's')).toBe(Date.UTC(2021, 0, 7, 5, 6, 7));
    expect(calendarFloor(0, 'fortnight')).toBeNull();
    expect(calendarFloor(0, 'd', 'Nowhere/Atlantis')).toBeNull();
    expect(calendarFloor(NaN, 'd')).toBeNull();
  });
});
