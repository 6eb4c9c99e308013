// Package remote measures candidates on other machines through NATS
// JetStream: the tuner's Measurer publishes each candidate as a job, and
// workers (`tune worker`) on device hosts build and run the jobs of their
// own target key with their local builder and runner and publish the
// results. Its entry points are Setup, Workers, NewMeasurer (the tuner's
// side, a search.Measurer) and RunWorker.
//
// The engine's objects (Setup creates them; a worker may only use them):
//
//	stream TESSERA_JOBS      work queue; subjects tessera.jobs.<key id>.<run>
//	  consumer w-<key id>    one durable pull consumer per target key, filtered
//	                         on tessera.jobs.<key id>.> (a work queue refuses
//	                         overlapping consumers); explicit acks, AckWait,
//	                         MaxDeliver; created by the tuner
//	stream TESSERA_RESULTS   results; subjects tessera.results.<run>; kept an hour
//	KV tessera_workers       presence: <key id>.<worker> → the worker's target
//	                         key, host and concurrency; entries expire unless
//	                         refreshed, so a dead worker disappears
//
// The key id is the target name and a hash of the target key ("cpu-" and 16
// hex digits), since a target key is not a subject token.
//
// One job, start to end:
//
//	tuner   publish Job{id = run/workload/hash of the steps, the input (the
//	        task's DAG and the steps), timing and codegen options} with the
//	        id as Nats-Msg-Id (a re-published job is dropped by the server)
//	worker  fetch one job at a time (nothing buffered past AckWait); decode;
//	        build and run while sending InProgress every AckWait/3; publish
//	        the Result to tessera.results.<run>; then ack
//	tuner   take the first result of each job id and drop any later one
//	        (a slow worker's after a redelivery)
//
// Faults: a job held by a worker that dies or hangs is redelivered after
// AckWait to another; after MaxDeliver deliveries the server's
// max-deliveries advisory makes the tuner record one failure for the
// candidate (RuntimeError) and delete the message. A batch that waits while
// no worker of the target key is present (NoWorker) fails with an error
// naming the key and the stream, and its jobs are purged, as they are when
// the tuner's context ends: a Measure error is never a candidate's failure.
package remote
