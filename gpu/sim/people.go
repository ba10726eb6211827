package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// notebookUser runs the notebooks that hold GPUs idle, so that the demo
// always tells the same story about them.
const notebookUser = "bob"

// people hands out who runs what on a simulated server: distinct users,
// plausible PIDs, command lines and containers.
type people struct {
	r       *rand.Rand
	users   []string
	next    int
	nextPID int
}

func newPeople(r *rand.Rand) *people {
	users := []string{"alice", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"}
	r.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
	return &people{r: r, users: users, nextPID: 20000 + r.IntN(300000)}
}

// user returns a user not handed out before (cycling when all are taken).
func (p *people) user() string {
	u := p.users[p.next%len(p.users)]
	p.next++
	return u
}

// pid returns a fresh PID, above the ones handed out before.
func (p *people) pid() int {
	p.nextPID += 1 + p.r.IntN(5000)
	return p.nextPID
}

// container returns where a job runs: a docker container, a Kubernetes pod
// or the bare host.
func (p *people) container() string {
	switch n := p.r.IntN(10); {
	case n < 4:
		return fmt.Sprintf("docker:%012x", p.r.Uint64()>>16)
	case n < 7:
		a, b := p.r.Uint64(), p.r.Uint64()
		return fmt.Sprintf("k8s:%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	}
	return ""
}

// trainCommand returns the command line of a training job.
func (p *people) trainCommand() string {
	commands := []string{
		"python train.py --model llama-7b --batch 32",
		"torchrun --nproc_per_node=1 train.py --config configs/mistral-7b.yaml",
		"python finetune.py --model qwen2-7b --lora --batch 16",
		"accelerate launch train_sft.py --model llama-3-8b --batch 8",
		"python train.py --model vit-large --batch 256 --amp",
		"python -m trainer.main --model t5-xl --batch 64",
		"deepspeed train.py --deepspeed ds_zero2.json --model gpt-neox-1.3b",
	}
	return commands[p.r.IntN(len(commands))]
}

// tfCommand returns the command line of a TensorFlow job.
func (p *people) tfCommand() string {
	commands := []string{
		"python train_tf.py --model resnet152 --epochs 90",
		"python -m official.vision.train --experiment retinanet",
		"python keras_train.py --model efficientnet-b7 --batch 64",
		"python t2t_trainer.py --problem translate_ende --model transformer",
	}
	return commands[p.r.IntN(len(commands))]
}

// processes returns the identities of a job's processes: the main one and,
// with withWorker, a second process of the same command (a data-loader
// worker that opened its own CUDA context).
func (p *people) processes(user, command, container string, withWorker bool) []gpu.Process {
	main := gpu.Process{PID: p.pid(), User: user, Command: command, Container: container}
	if !withWorker {
		return []gpu.Process{main}
	}
	worker := main
	worker.PID = main.PID + 1 + p.r.IntN(40)
	p.nextPID = worker.PID
	return []gpu.Process{main, worker}
}
