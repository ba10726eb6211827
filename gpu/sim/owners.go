package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// The scenarios of a node shared by several people, where whose each job
// is matters: who gets told, who answers.
const (
	// ScenarioSharedNode: four people on one node, each job's owner known
	// a different way (a Unix user, a Kubernetes namespace).
	ScenarioSharedNode = "shared-node"
	// ScenarioSlurmNode: a Slurm node, every process in a job.
	ScenarioSlurmNode = "slurm-node"
)

// PeopleScenarios returns the scenarios of shared nodes, in the order
// Scenarios lists them.
func PeopleScenarios() []string { return []string{ScenarioSharedNode, ScenarioSlurmNode} }

// peopleBuilder returns the builder of a shared-node scenario, or nil.
func peopleBuilder(name string) func(*rand.Rand) *plan {
	switch name {
	case ScenarioSharedNode:
		return sharedNode
	case ScenarioSlurmNode:
		return slurmNode
	}
	return nil
}

// sharedLength is how long the shared-node scenarios last: long enough for
// an idle GPU's owner to snooze its alert for two hours and be asked again.
const sharedLength = 4 * time.Hour

// sharedNode: four H100s shared by four people. On GPU 0 alice's training
// (on the host) leaks from ~6 minutes until it dies of OOM at ~100; on
// GPU 1 bob's notebook (on the host) holds 20 GiB idle from ~5 minutes to
// the end; on GPU 2 carol's training takes a bigger batch at ~20 minutes
// and stays near full for ~45; on GPU 3 a notebook in a pod of the
// namespace "vision" (its process runs as uid 1000, which the host does
// not name) goes idle at ~8 minutes and is freed at ~3 hours.
func sharedNode(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: sharedLength}

	g0 := &gpuPlan{model: h100()}
	j0 := trainer(r, pp, 0, 0, between(r, 30000, 34000))
	j0.procs = pp.processes("alice", "python train.py --model llama-7b --batch 32", "", false)
	leak := withLeak(r, 0, g0, j0, durBetween(r, 5*time.Minute, 7*time.Minute), durBetween(r, 95*time.Minute, 105*time.Minute))
	g0.jobs = []*job{j0}

	nb := notebook(r, pp, durBetween(r, 4*time.Minute, 6*time.Minute))
	nb.procs = pp.processes("bob", "jupyter-lab --no-browser --port 8888", "", false)
	g1 := &gpuPlan{model: h100(), jobs: []*job{nb}}

	g2 := &gpuPlan{model: h100()}
	j2 := trainer(r, pp, 0, 0, between(r, 42000, 48000))
	j2.procs = pp.processes("carol", "torchrun --nproc_per_node=1 train.py --config configs/mistral-7b.yaml", "", false)
	j2.spikeFrom = durBetween(r, 18*time.Minute, 22*time.Minute)
	j2.spikeUntil = j2.spikeFrom + durBetween(r, 44*time.Minute, 48*time.Minute)
	j2.spikeMiB = math.Round(g2.memMiB * between(r, 0.966, 0.974))
	g2.jobs = []*job{j2}

	pod := notebook(r, pp, durBetween(r, 7*time.Minute, 9*time.Minute))
	pod.procs = pp.processes("1000", "/opt/conda/bin/python -m ipykernel_launcher", "k8s:vision/jupyter-dave-0", false)
	pod.end = durBetween(r, 175*time.Minute, 185*time.Minute)
	g3 := &gpuPlan{model: h100(), jobs: []*job{pod}}

	p.gpus = []*gpuPlan{g0, g1, g2, g3}
	p.truth = append(leak,
		Truth{GPU: 1, Expect: ExpectIdle, From: nb.idleFrom, Until: p.duration},
		Truth{GPU: 2, Expect: ExpectNearOOM, From: j2.spikeFrom, Until: j2.spikeUntil},
		Truth{GPU: 3, Expect: ExpectIdle, From: pod.idleFrom, Until: pod.end},
	)
	return p
}

// slurmLength is how long the Slurm node's scenario lasts.
const slurmLength = 3 * time.Hour

// slurmNode: four A100s of a Slurm node, every process in a job (its
// cgroup names it, its environment its account). On GPU 0 alice's job
// leaks from ~5 minutes until it dies of OOM at ~80, and dave's job takes
// the GPU ten minutes later: a change of hands. On GPU 1 bob's interactive
// job (srun --pty jupyter lab) holds 20 GiB idle from ~6 minutes to the
// end. On GPUs 2 and 3 carol's job trains on both, quietly.
func slurmNode(r *rand.Rand) *plan {
	pp := newPeople(r)
	p := &plan{duration: slurmLength}
	first := 4200 + r.IntN(700)
	inJob := func(procs []gpu.Process, id int, account string) []gpu.Process {
		for i := range procs {
			procs[i].Job, procs[i].Account = fmt.Sprintf("slurm:%d", id), account
		}
		return procs
	}

	g0 := &gpuPlan{model: a100()}
	j0 := trainer(r, pp, 0, 0, between(r, 20000, 24000))
	j0.procs = inJob(pp.processes("alice", "python train.py --model vit-large --batch 256 --amp", "", true), first, "physics")
	leak := withLeak(r, 0, g0, j0, durBetween(r, 4*time.Minute, 6*time.Minute), durBetween(r, 75*time.Minute, 85*time.Minute))
	next := trainer(r, pp, j0.end+durBetween(r, 8*time.Minute, 12*time.Minute), durBetween(r, 80*time.Second, 120*time.Second), between(r, 30000, 36000))
	next.procs = inJob(pp.processes("dave", "python -m trainer.main --model t5-xl --batch 64", "", false), first+59+r.IntN(20), "vision")
	g0.jobs = []*job{j0, next}

	nb := notebook(r, pp, durBetween(r, 5*time.Minute, 7*time.Minute))
	nb.procs = inJob(pp.processes("bob", "jupyter-lab --no-browser --ip 0.0.0.0 --port 8888", "", false), first+8, "vision")
	g1 := &gpuPlan{model: a100(), jobs: []*job{nb}}

	user, command, id := "carol", "torchrun --nproc_per_node=2 train.py --model llama-13b --batch 16", first+19
	start, ramp, mem := durBetween(r, 30*time.Second, 90*time.Second), durBetween(r, 100*time.Second, 140*time.Second), between(r, 30000, 34000)
	for range 2 {
		j := trainer(r, pp, start, ramp, mem+between(r, -100, 100))
		j.procs = inJob(pp.processes(user, command, "", false), id, "physics")
		withEvals(r, j, durBetween(r, 18*time.Minute, 22*time.Minute))
		p.gpus = append(p.gpus, &gpuPlan{model: a100(), jobs: []*job{j}})
	}
	p.gpus = append([]*gpuPlan{g0, g1}, p.gpus...)
	p.truth = append(leak,
		Truth{GPU: 1, Expect: ExpectIdle, From: nb.idleFrom, Until: p.duration},
		healthy(2, p.duration), healthy(3, p.duration),
	)
	return p
}
