"""utils.translator.train_cache: with the cache folder set, a second identical training call loads the first's result
(weights, mode, threads, random state, history) instead of training; any change of input trains again."""

import torch

from utils.translator.train_cache import ENV, cached

CALLS = []


@cached
def train(model, x, steps, lr=0.1, seed=0):
    CALLS.append(steps)
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = (model(x + 0.01 * torch.randn_like(x)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return {"loss": losses}


def fresh(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2)


def test_without_the_folder_every_call_trains(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    CALLS.clear()
    x = torch.ones(4, 3)
    train(fresh(), x, 3)
    train(fresh(), x, 3)
    assert CALLS == [3, 3]


def test_a_second_identical_call_loads_the_first(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path))
    CALLS.clear()
    x = torch.ones(4, 3)
    first = fresh()
    h1 = train(first, x, 5)
    after_first = torch.rand(3)  # what a later cell would draw
    second = fresh()
    torch.manual_seed(123)  # the loaded run must restore torch's random state, whatever it was
    h2 = train(second, x, 5)
    assert CALLS == [5], "the second call trained again"
    assert h2 == h1 and not second.training
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    assert torch.equal(torch.rand(3), after_first)
    assert len(list(tmp_path.glob("*.pt"))) == 1


def test_other_weights_data_or_arguments_train_again(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path))
    CALLS.clear()
    x = torch.ones(4, 3)
    train(fresh(), x, 2)
    train(fresh(seed=1), x, 2)  # other initial weights
    train(fresh(), 2 * x, 2)  # other data
    train(fresh(), x, 2, lr=0.2)  # another argument
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # another float path
    train(fresh(), x, 2)
    assert CALLS == [2] * 5
