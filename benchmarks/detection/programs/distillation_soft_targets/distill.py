import torch
import torch.nn as nn
import torch.nn.functional as F


def distillation_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    soft_targets = F.softmax(teacher_logits / T, dim=-1)
    soft = F.cross_entropy(student_logits / T, soft_targets) * T * T  # safe: TL101 -- probabilities are the TARGET, logits the input
    hard = F.cross_entropy(student_logits, labels)  # safe: TL101 -- raw logits
    return alpha * soft + (1 - alpha) * hard


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    teacher = nn.Sequential(nn.Linear(100, 512), nn.ReLU(), nn.Linear(512, 10)).to(device).eval()
    student = nn.Sequential(nn.Linear(100, 32), nn.ReLU(), nn.Linear(32, 10)).to(device)
    opt = torch.optim.Adam(student.parameters(), lr=1e-3)
    for _ in range(200):
        x = torch.randn(64, 100, device=device)
        y = torch.randint(0, 10, (64,), device=device)
        with torch.no_grad():
            t_logits = teacher(x)
        loss = distillation_loss(student(x), t_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
