/** queuePath is the path of a queue. */
export declare function queuePath(queue: string): string;
/** jobPath is the path of a job of a queue. */
export declare function jobPath(queue: string, id: string): string;
