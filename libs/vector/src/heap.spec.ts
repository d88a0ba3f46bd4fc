import { TopK } from './heap';
import { rng } from './kmeans';

test('TopK keeps the k smallest, closest first, against a full sort', () => {
  const r = rng(1);
  for (const k of [1, 3, 10, 50]) {
    const xs = Array.from({ length: 500 }, (_, i) => ({ label: i, score: Math.floor(r() * 100) }));
    const top = new TopK(k);
    for (const x of xs) top.push(x.score, x.label);
    const want = [...xs].sort((a, b) => a.score - b.score || a.label - b.label).slice(0, k).map((x) => x.score);
    expect(top.sorted().map((x) => x.score)).toEqual(want);
  }
});
