/** queuePath is the path of a queue; it throws a TypeError for a name no path can hold. */
export declare function queuePath(queue: string): string;
/** jobPath is the path of a job of a queue; it throws a TypeError for a name or id no path can hold. */
export declare function jobPath(queue: string, id: string): string;
