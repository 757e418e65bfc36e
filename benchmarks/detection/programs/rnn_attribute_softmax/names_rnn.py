"""Name classification with a character RNN whose output layer is an nn.Softmax, trained by a
function that receives the model as a parameter."""
import torch
import torch.nn as nn


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x, hidden):
        hidden = torch.tanh(self.i2h(torch.cat((x, hidden), 1)))
        return self.h2o(hidden), hidden

    def init_hidden(self):
        return torch.zeros(1, self.hidden_size)


criterion = nn.NLLLoss()


def train_step(rnn, optimizer, line_tensor, category_tensor):
    hidden = rnn.init_hidden()
    for i in range(line_tensor.size(0)):
        scores, hidden = rnn(line_tensor[i], hidden)
    probs = rnn.softmax(scores)
    loss = criterion(probs, category_tensor)  # expect: TL102 -- RNN.softmax is nn.Softmax: NLLLoss gets -p, not -log p
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


if __name__ == "__main__":
    model = RNN(57, 128, 18)
    opt = torch.optim.SGD(model.parameters(), lr=0.005)
    for _ in range(100):
        train_step(model, opt, torch.randn(6, 1, 57), torch.randint(0, 18, (1,)))
