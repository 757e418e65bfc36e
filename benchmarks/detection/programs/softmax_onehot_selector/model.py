import torch
import torch.nn as nn
import torch.nn.functional as F


class SlotPointer(nn.Module):
    """Scores candidates for each slot, then picks each example's slot with a one-hot selector."""

    def __init__(self, dim=8, slots=4, classes=5):
        super().__init__()
        self.score = nn.Linear(dim, classes)
        self.slots = slots

    def forward(self, x, slot):
        probs = torch.softmax(self.score(x), dim=-1)                      # (B, slots, classes)
        selector = F.one_hot(slot, self.slots).float().unsqueeze(1)       # (B, 1, slots)
        return torch.bmm(selector, probs).squeeze(1)                      # (B, classes)


def train_step(model, x, slot, target):
    picked = model(x, slot)
    return F.cross_entropy(picked, target)  # expect: TL101 -- each row is a softmax row picked by a one-hot selector: still probabilities


def scatter_pick(scores, slot, target):
    probs = F.softmax(scores, dim=-1)                                       # (B, slots, classes)
    selector = torch.zeros(scores.shape[0], 1, scores.shape[1], device=scores.device)
    selector.scatter_(2, slot.view(-1, 1, 1), 1.0)
    picked = selector.bmm(probs).squeeze(1)
    return nn.CrossEntropyLoss()(picked, target)  # expect: TL101 -- a zeros tensor scattered with 1 selects softmax rows


def attention_logits(scores, values, target):
    attn = torch.softmax(scores, dim=-1)                                    # (B, 1, slots)
    mixed = torch.bmm(attn, values).squeeze(1)                              # (B, classes): a weighted sum of logits
    return F.cross_entropy(mixed, target)  # safe: TL101 -- attention-weighted values are not probabilities


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SlotPointer()
    x, slot, target = torch.randn(3, 4, 8), torch.tensor([0, 2, 3]), torch.tensor([1, 0, 4])
    picked = model(x, slot)
    print("rows sum to", picked.sum(-1).tolist())
    print(train_step(model, x, slot, target).item())
    print(scatter_pick(torch.randn(3, 4, 5), slot, target).item())
    print(attention_logits(torch.randn(3, 1, 4), torch.randn(3, 4, 5), target).item())
