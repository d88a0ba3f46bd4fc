import * as fs from 'fs';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';

/**
 * Why the node might refuse writes: the free space under the data directory (checked
 * every few seconds and after an ENOSPC) and recent commit-queue overflows.
 */
@Injectable()
export class Pressure implements OnApplicationShutdown {
  private freeBytes = Number.POSITIVE_INFINITY;
  private diskFullSeen = 0;
  private queueFullSeen = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.refresh();
    this.timer = setInterval(() => this.refresh(), 5000);
    this.timer.unref();
  }

  refresh(): void {
    try {
      const s = fs.statfsSync(this.config.dataDir);
      this.freeBytes = s.bavail * s.bsize;
      if (this.freeBytes >= this.config.minFreeBytes) this.diskFullSeen = 0;
    } catch {
      /* the directory may not exist yet */
    }
  }

  get free(): number {
    return this.freeBytes;
  }

  noteDiskFull(): void {
    this.diskFullSeen = Date.now();
  }

  noteQueueFull(): void {
    this.queueFullSeen = Date.now();
  }

  /** A reason writes must be refused now, or null. */
  writeBlocker(): string | null {
    if (this.freeBytes < this.config.minFreeBytes) return 'disk_full';
    if (this.diskFullSeen && Date.now() - this.diskFullSeen < 5000) return 'disk_full';
    return null;
  }

  /** Reasons for /ready: a blocker, or a commit queue that overflowed in the last 5 s. */
  reasons(): string[] {
    const out: string[] = [];
    const b = this.writeBlocker();
    if (b) out.push(b);
    if (this.queueFullSeen && Date.now() - this.queueFullSeen < 5000) out.push('commit_queue_full');
    return out;
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
