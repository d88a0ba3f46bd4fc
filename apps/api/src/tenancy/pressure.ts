import * as fs from 'fs';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';

/** Free space under the data directory, sampled every few seconds (for /ready with no store open). */
@Injectable()
export class Pressure implements OnApplicationShutdown {
  private freeBytes: number | null = null;
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
    } catch {
      this.freeBytes = null;
    }
  }

  get free(): number | null {
    return this.freeBytes;
  }

  /** True when the data directory's disk is under DB_MIN_FREE_BYTES. */
  get diskFull(): boolean {
    return this.freeBytes !== null && this.freeBytes < this.config.minFreeBytes;
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
